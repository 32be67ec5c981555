// The browser origins a tenant allows on the routes its contact tokens reach (server/api/app.ts):
// exact origins as the Origin header carries them, at most 50 (server/schemas/tenants.ts validates
// each; the check keeps a write that bypasses the API bounded too).
import { Migration } from '@mikro-orm/migrations';

export class TenantCorsOrigins extends Migration {
  override name = '0005-tenant-cors-origins';

  up(): void {
    this.addSql(`ALTER TABLE tenants ADD COLUMN cors_origins text[] NOT NULL DEFAULT '{}'
      CHECK (cardinality(cors_origins) <= 50)`);
  }
}

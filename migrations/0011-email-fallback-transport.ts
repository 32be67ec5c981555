// A tenant's email transports by slot: the primary (the spec's /v1/email-transport) and a fallback
// relay asked when the primary fails for now (/v1/email-transport/fallback). Existing rows are the
// primary; the key grows to (tenant_id, slot), so each tenant keeps at most one of each.
import { Migration } from '@mikro-orm/migrations';

export class EmailFallbackTransport extends Migration {
  override name = '0011-email-fallback-transport';

  up(): void {
    this.addSql(`ALTER TABLE email_transports ADD COLUMN slot text NOT NULL DEFAULT 'primary'
      CHECK (slot IN ('primary', 'fallback'))`);
    this.addSql(`ALTER TABLE email_transports DROP CONSTRAINT email_transports_pkey`);
    this.addSql(`ALTER TABLE email_transports ADD CONSTRAINT email_transports_pkey PRIMARY KEY (tenant_id, slot)`);
  }
}

// A tenant's http channel transport (server/channels/http): the URL every recipient's message is
// POSTed to, the secret headers sent with it and the signing secret, both encrypted with the key
// ring and never returned, and whether secret variables reach the body in clear.
import { Migration } from '@mikro-orm/migrations';

export class HttpTransports extends Migration {
  override name = '0010-http-transports';

  up(): void {
    this.addSql(`
      CREATE TABLE http_transports (
        tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
        url text NOT NULL CHECK (length(url) <= 2048),
        headers_ciphertext text,
        secret_ciphertext text NOT NULL,
        include_secret_variables boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
  }
}

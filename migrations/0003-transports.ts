// Transports: one email transport per tenant, one push transport per tenant and provider. Non-secret
// settings are plain columns/JSON; secret fields are one key-ring ciphertext each row.
import { Migration } from '@mikro-orm/migrations';

export class Transports extends Migration {
  override name = '0003-transports';

  up(): void {
    this.addSql(`
      CREATE TABLE email_transports (
        tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
        host text NOT NULL,
        port integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
        secure boolean NOT NULL DEFAULT false,
        username text,
        password_ciphertext text,
        from_email text NOT NULL,
        from_name text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`
      CREATE TABLE push_transports (
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        provider text NOT NULL CHECK (provider IN ('apns', 'fcm', 'expo', 'webpush')),
        settings jsonb NOT NULL DEFAULT '{}',
        secrets_ciphertext text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, provider)
      )`);
  }

  override down(): void {
    this.addSql(`DROP TABLE IF EXISTS push_transports, email_transports`);
  }
}

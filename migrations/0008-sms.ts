// The tenant's SMS transports (server/channels/sms): one row per provider (twilio, vonage, a generic
// http gateway), asked in `priority` order (lower first) with failover. Non-secret settings are JSON;
// the provider's secrets (auth token, api secret, gateway headers, the callback token) are one
// key-ring ciphertext bound to the row. The callback URL's token is found by its SHA-256 hash, so a
// provider's callback reaches its tenant without a credential. Receipts find their delivery by the
// provider's message id within the tenant: a partial index over the SMS deliveries that have one.
import { Migration } from '@mikro-orm/migrations';

export class Sms extends Migration {
  override name = '0008-sms';

  up(): void {
    this.addSql(`
      CREATE TABLE sms_transports (
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        provider text NOT NULL CHECK (provider IN ('twilio', 'vonage', 'http')),
        priority integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 1000),
        enabled boolean NOT NULL DEFAULT true,
        settings jsonb NOT NULL DEFAULT '{}',
        secrets_ciphertext text,
        callback_token_hash text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, provider)
      )`);
    this.addSql(`CREATE INDEX deliveries_sms_provider_message ON deliveries (tenant_id, provider_message_id)
      WHERE channel = 'sms' AND provider_message_id IS NOT NULL`);
  }
}

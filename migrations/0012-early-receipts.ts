// Delivery receipts that arrive before their delivery names the provider's message id: a provider can
// call back before the send's store commits (it commits after the provider's answer). Kept here by
// (tenant, channel, provider message id) until the store writes that id and applies them; pruned after
// a day (server/delivery/early-receipts.ts). Written on the callback route only, so the tenant's key
// costs nothing on the delivery path.
import { Migration } from '@mikro-orm/migrations';

export class EarlyReceipts extends Migration {
  override name = '0012-early-receipts';

  up(): void {
    this.addSql(`
      CREATE TABLE early_receipts (
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        channel text NOT NULL,
        provider_message_id text NOT NULL,
        status text NOT NULL CHECK (status IN ('delivered', 'failed')),
        error text,
        received_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, channel, provider_message_id)
      )`);
    this.addSql(`CREATE INDEX early_receipts_received_at ON early_receipts (received_at)`);
  }
}

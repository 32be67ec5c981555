// What is learnt of a delivery after its send: a bounce or a complaint (channels/email/feedback.ts,
// through the inbound listener), an SMS provider's delivery receipt (api/routes/provider-callbacks.ts),
// kept when it comes before the delivery names its message id (early-receipts.ts).
// The deliveries table is this folder's, so the channels that hear of such an outcome are handed this
// recorder (app/runtime.ts), or the route that hears of it calls it, instead of writing the row themselves.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, query } from '../base/db/sql.ts';
import type { LateOutcomeRecorder } from '../channels/types.ts';
import { truncate } from './stages/store.ts';

const RECORD_LATE_OUTCOME = `UPDATE deliveries SET status = $2, last_error = $3, updated_at = now() WHERE id = $1`;

// A provider's receipt moves a sent delivery on (sent -> delivered or failed) and never back: a
// receipt for a delivery already delivered, failed or bounced, or arriving twice, changes nothing. A
// receipt no delivery names yet is kept (early-receipts.ts) for the store to apply; the first kept wins.
// The channel is written out, not a parameter: only then can a prepared statement's generic plan use
// the partial index deliveries_sms_provider_message (channel = 'sms') instead of scanning deliveries.
const RECORD_RECEIPT = `WITH moved AS (
       UPDATE deliveries
          SET status = $3, last_error = CASE WHEN $3 = 'failed' THEN $4 ELSE last_error END, updated_at = now()
        WHERE tenant_id = $1 AND channel = 'sms' AND provider_message_id = $2 AND status = 'sent'
       RETURNING id
     ), kept AS (
       INSERT INTO early_receipts (tenant_id, channel, provider_message_id, status, error)
       SELECT $1::uuid, 'sms', $2::text, $3::text, $4::text
        WHERE NOT EXISTS (SELECT 1 FROM deliveries WHERE tenant_id = $1 AND channel = 'sms' AND provider_message_id = $2)
       ON CONFLICT (tenant_id, channel, provider_message_id) DO NOTHING
     )
     SELECT id FROM moved`;

export const recordLateOutcome: LateOutcomeRecorder = async (em: EntityManager, deliveryId, outcome) => {
  await execute(em, RECORD_LATE_OUTCOME, [deliveryId, outcome.status, truncate(outcome.error)]);
};

/**
 * Records a provider's delivery receipt on the tenant's delivery that the provider's message id
 * names; the ids of the deliveries it moved (none for a delivery already final, or one not stored
 * yet: its receipt is kept until the store writes the id).
 */
export async function recordReceipt(
  em: EntityManager,
  tenantId: string,
  receipt: { channel: 'sms'; providerMessageId: string; status: 'delivered' | 'failed'; error: string | null },
): Promise<string[]> {
  const rows = await query<{ id: string }>(em, RECORD_RECEIPT, [
    tenantId,
    receipt.providerMessageId,
    receipt.status,
    receipt.error === null ? null : truncate(receipt.error),
  ]);
  return rows.map((r) => r.id);
}

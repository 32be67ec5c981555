// Delivery receipts that arrive before their delivery names the provider's message id. A provider can
// call back as soon as it has answered the send, and the send's store commits only after that answer;
// such a receipt matches no delivery yet. recordReceipt (late-outcomes.ts) keeps it here, and the store
// applies it when it writes that message id (stages/store.ts), in the same transaction. A receipt kept
// while a store's transaction was still open (it read no receipt, and the receipt's statement read no
// delivery) is applied by the hourly sweep instead; a receipt that never finds its delivery (a test
// send, another system's message) is pruned after a day.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute } from '../base/db/sql.ts';
import { planEachCall } from '../base/db/prepared.ts';

/** The channels whose providers send delivery receipts. */
export const RECEIPT_CHANNELS: ReadonlySet<string> = new Set(['sms']);

/**
 * What applying a kept receipt does: what recordReceipt does (a sent delivery moves to delivered or
 * failed, never back), from the receipts `taken` (delivery id, status, error) removes.
 */
const applyTakenSql = (taken: string) => `WITH taken AS (${taken})
  UPDATE deliveries d
     SET status = t.status, last_error = CASE WHEN t.status = 'failed' THEN t.error ELSE d.last_error END, updated_at = now()
    FROM taken t
   WHERE d.id = t.delivery_id AND d.status = 'sent'`;

/** $1 the ids of deliveries just stored as sent with a provider message id. */
const APPLY_EARLY_RECEIPTS = planEachCall(
  applyTakenSql(`DELETE FROM early_receipts r USING deliveries d
   WHERE d.id = ANY($1::uuid[]) AND r.tenant_id = d.tenant_id AND r.channel = d.channel
     AND r.provider_message_id = d.provider_message_id
  RETURNING d.id AS delivery_id, r.status, r.error`),
);

/** Every kept receipt whose delivery has its message id now (the SMS deliveries' index finds them). */
const SWEEP_EARLY_RECEIPTS = applyTakenSql(`DELETE FROM early_receipts r USING deliveries d
   WHERE d.channel = 'sms' AND d.provider_message_id IS NOT NULL
     AND r.tenant_id = d.tenant_id AND r.channel = d.channel AND r.provider_message_id = d.provider_message_id
  RETURNING d.id AS delivery_id, r.status, r.error`);

// A day: providers retry a receipt for about as long, and a send's store is seconds behind its answer.
const PRUNE_EARLY_RECEIPTS = `DELETE FROM early_receipts WHERE received_at < now() - interval '1 day'`;

/** Whether a stored delivery can have a kept receipt: sent, on a channel with receipts, with the provider's id. */
export function mayHaveEarlyReceipt(delivery: {
  channel: string;
  status: string;
  provider_message_id?: string | null;
}): boolean {
  return delivery.status === 'sent' && !!delivery.provider_message_id && RECEIPT_CHANNELS.has(delivery.channel);
}

/** Applies the kept receipts of these deliveries (just stored as sent with a provider message id). */
export async function applyEarlyReceipts(em: EntityManager, deliveryIds: string[]): Promise<void> {
  if (deliveryIds.length > 0) await execute(em, APPLY_EARLY_RECEIPTS, [deliveryIds]);
}

/** Applies the kept receipts whose delivery has appeared, then deletes those kept for over a day. */
export async function sweepEarlyReceipts(em: EntityManager): Promise<{ applied: number; pruned: number }> {
  const applied = await execute(em, SWEEP_EARLY_RECEIPTS);
  const pruned = await execute(em, PRUNE_EARLY_RECEIPTS);
  return { applied, pruned };
}

// Retention of events: one batch of final events created before the cutoff, deleted with their
// deliveries (the events_deleted trigger). An event an open digest still collects into, as its opener
// or one of its digested events, stays until the digest closes.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute } from '../base/db/sql.ts';
import { FINAL_EVENT_STATUSES } from '../base/statuses.ts';
import { idFloor } from '../base/ids.ts';

// By id, which orders events by creation (base/ids.ts idFloor): the primary key finds them, and no
// index on created_at costs every trigger's insert.
const PRUNE_EVENTS = `DELETE FROM events WHERE id IN (
  SELECT e.id FROM events e
   WHERE e.id < $1::uuid AND e.status = ANY($2::text[]) AND e.updated_at < $4
     AND NOT EXISTS (SELECT 1 FROM digests d WHERE d.closed_at IS NULL
                      AND d.opener_event_id IN (e.id, e.digest_event_id))
   ORDER BY e.id LIMIT $3)`;

/**
 * Deletes up to `limit` final events created and last changed before `cutoff` (and their deliveries):
 * one sent long after its creation (scheduled far ahead, retried for days) is kept as long after
 * it became final, for receipts and bounces still to come. Returns how many.
 */
export async function pruneEventsBatch(em: EntityManager, cutoff: Date, limit: number): Promise<number> {
  return execute(em, PRUNE_EVENTS, [idFloor(cutoff.getTime()), [...FINAL_EVENT_STATUSES], limit, cutoff]);
}

// Canceling events not final yet: by id or by cancellation key. A canceled event is final: its steps
// not run yet never run, its pending deliveries are skipped ('canceled'), a digest window it opened
// closes, and the job that would have run it next finds it final and does nothing. A round already
// running holds the event's row lock, so a cancel waits for it and applies to what it left.
import type { EntityManager } from '@mikro-orm/postgresql';
import { queryOne } from '../base/db/sql.ts';

function cancelSql(match: string): string {
  return `
  WITH canceled AS (
    UPDATE events e
       SET status = 'canceled', updated_at = now(), secret_variables_ciphertext = NULL,
           steps = CASE WHEN e.steps IS NULL THEN NULL ELSE
                     (SELECT jsonb_agg(CASE WHEN s->>'status' IN ('pending', 'waiting') THEN s || '{"status": "canceled"}'::jsonb ELSE s END ORDER BY n)
                        FROM jsonb_array_elements(e.steps) WITH ORDINALITY AS x(s, n)) END
     WHERE e.tenant_id = $1 AND ${match} AND e.status IN ('scheduled', 'queued', 'processing')
     RETURNING e.id
  ), skipped AS (
    UPDATE deliveries SET status = 'skipped', reason = 'canceled', updated_at = now()
     WHERE event_id IN (SELECT id FROM canceled) AND status = 'pending'
     RETURNING 1
  ), closed AS (
    UPDATE digests SET closed_at = now() WHERE opener_event_id IN (SELECT id FROM canceled) AND closed_at IS NULL RETURNING 1
  )
  SELECT (SELECT count(*) FROM canceled)::int AS canceled, (SELECT count(*) FROM skipped)::int AS skipped, (SELECT count(*) FROM closed)::int AS closed`;
}

const BY_KEY = cancelSql('e.cancellation_key = $2');
const BY_ID = cancelSql('e.id = $2');
const BY_BROADCAST = cancelSql('e.broadcast_id = $2');

/** Cancels the tenant's events carrying the key that are not final yet; returns how many. */
export async function cancelByKey(em: EntityManager, tenantId: string, key: string): Promise<number> {
  return (await queryOne<{ canceled: number }>(em, BY_KEY, [tenantId, key]))!.canceled;
}

/** Cancels one event if it is not final yet; false when it is final (or not the tenant's). */
export async function cancelById(em: EntityManager, tenantId: string, eventId: string): Promise<boolean> {
  return (await queryOne<{ canceled: number }>(em, BY_ID, [tenantId, eventId]))!.canceled === 1;
}

/** Cancels a broadcast's events that are not final yet (those a worker holds included); returns how many. */
export async function cancelByBroadcast(em: EntityManager, tenantId: string, broadcastId: string): Promise<number> {
  return (await queryOne<{ canceled: number }>(em, BY_BROADCAST, [tenantId, broadcastId]))!.canceled;
}

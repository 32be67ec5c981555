// The write side of the batch fast path (batch.ts): one statement that stores a batch's outcome.
// Deliveries are inserted with their final status (no 'pending' row version to update), inbox items
// with their stream ids (each is its own 'notification'; the stream hub derives the counts), the
// events get their final status and their delivery jobs are completed (complete.ts), all from
// data-modifying CTEs. The statement is all or nothing on its own (herald_assert, migration 0011), so
// the batch path needs no transaction around it: it commits once, with the statement.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { statementPerQueue, type PgBoss } from '../queue.ts';
import { NEXT_STREAM_ID_SQL, streamLockSql, streamNoticesSql } from '../stream/events.ts';
import { completionParameters, deliveryJobsCompletionCte, type FetchedJob } from './complete.ts';
import { EVENT_STATUS_FROM_DELIVERIES } from './worker.ts';

export interface StoredDelivery {
  id: string;
  event_id: string;
  tenant_id: string;
  channel: string;
  destination: string;
  provider: string | null;
  status: 'delivered' | 'failed' | 'skipped';
  reason: string | null;
  last_error: string | null;
  attempts: number;
}

export interface StoredItem {
  id: string;
  tenant_id: string;
  contact_id: string;
  event_id: string;
  delivery_id: string;
  type_key: string;
  title: string;
  body: string;
  action_url: string | null;
  data: Record<string, unknown>;
}

/**
 * Stores every delivery of the events (all of them: the events were found 'queued' and unplanned), the
 * items of the delivered ones (with their stream ids) and the events' final statuses, and completes
 * `jobs` (the delivery jobs all of whose events are settled, as fetched; a job no longer active under
 * that attempt is left alone). It needs no transaction (it runs in the caller's, if any).
 *
 * Stored whole or not at all: the statement moves each event on from 'queued' (an UPDATE, which waits
 * for a transaction holding the event and then reads the event as that one left it) and asserts in
 * its final SELECT that every event still was, and that every delivery and item went in; the
 * assertion's error undoes the statement. Plain inserts, no ON CONFLICT: no event stays 'queued' once
 * an attempt has stored its deliveries (every attempt that plans moves the status on), and one still
 * storing them holds the event, or makes the inserts here fail on the unique keys (deliveries: event,
 * channel, destination; inbox_items: delivery_id). Either way the statement throws and the per-event
 * path takes over; so it does when two attempts at one event (one whose claim lapsed, and the next)
 * lock in opposite orders and PostgreSQL breaks the deadlock by failing one. Speculative insertion
 * (ON CONFLICT) cost an index probe and a WAL record more per row: about 10% of this statement's WAL.
 *
 * It takes the stream locks of the items' contacts (in contact order) before it draws their stream
 * ids, and holds them until its transaction ends, so each contact's ids commit in increasing order.
 */
export async function storeBatch(
  em: EntityManager,
  boss: PgBoss,
  batch: { deliveries: StoredDelivery[]; items: StoredItem[]; eventIds: string[]; jobs: FetchedJob[] },
): Promise<void> {
  await query(em, await storeStatement(boss), [
    JSON.stringify(batch.deliveries),
    JSON.stringify(batch.items),
    batch.eventIds,
    ...completionParameters(batch.jobs),
  ]);
}

/** The statement per queue instance: it embeds the delivery queue's table name, read from pg-boss once. */
const storeStatement = statementPerQueue((boss) => deliveryJobsCompletionCte(boss, 4).then(buildStoreStatement));

/**
 * $1 deliveries (StoredDelivery[]), $2 items (StoredItem[]), $3 event ids, $4-$7 the completion's
 * parameters (completionParameters).
 */
function buildStoreStatement(completedJobsCte: string): string {
  return `WITH planned AS (
       INSERT INTO deliveries (id, event_id, tenant_id, channel, destination, provider, status, reason, last_error, attempts)
       SELECT id, event_id, tenant_id, channel, destination, provider, status, reason, last_error, attempts
         FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, event_id uuid, tenant_id uuid, channel text, destination text, provider text,
                                                 status text, reason text, last_error text, attempts int)
       RETURNING id, event_id, status
     ), input AS (
       SELECT * FROM ROWS FROM (jsonb_to_recordset($2::jsonb) AS (id uuid, tenant_id uuid, contact_id uuid, event_id uuid, delivery_id uuid,
                                                                  type_key text, title text, body text, action_url text, data jsonb))
         WITH ORDINALITY AS x(id, tenant_id, contact_id, event_id, delivery_id, type_key, title, body, action_url, data, n)
     ), stream_locks AS (
       SELECT count(${streamLockSql('contact_id')}) AS n FROM (SELECT DISTINCT contact_id FROM input ORDER BY contact_id) AS contacts
     ), stored AS (
       -- Stream ids drawn only once every lock is held: each row is joined with the locks' one row,
       -- which the aggregate yields after taking them all; in item order (PostgreSQL computes a
       -- volatile output column after the sort).
       INSERT INTO inbox_items (id, tenant_id, contact_id, event_id, delivery_id, type_key, title, body, action_url, data, stream_id)
       SELECT i.id, i.tenant_id, i.contact_id, i.event_id, i.delivery_id, i.type_key, i.title, i.body, i.action_url, coalesce(i.data, '{}'), ${NEXT_STREAM_ID_SQL}
         FROM input i JOIN planned p ON p.id = i.delivery_id CROSS JOIN stream_locks
        ORDER BY i.n
       RETURNING contact_id
     ), rolled_up AS (
       -- Only events still 'queued' (re-read after any transaction holding one ends); the assertion
       -- below undoes the statement if one was not.
       UPDATE events e
          SET status = s.status, updated_at = now(),
              secret_variables_ciphertext = CASE WHEN s.status = 'processing' THEN e.secret_variables_ciphertext ELSE NULL END
         FROM (SELECT ev.id, ${EVENT_STATUS_FROM_DELIVERIES} AS status
                 FROM unnest($3::uuid[]) AS ev(id) LEFT JOIN planned d ON d.event_id = ev.id
                GROUP BY ev.id) AS s
        WHERE e.id = s.id AND e.status = 'queued'
       RETURNING e.id
     ), ${completedJobsCte}
     SELECT herald_assert((SELECT count(*) FROM rolled_up) = cardinality($3::uuid[]), 'batch store: an event of the batch is no longer queued') AS events_queued,
            herald_assert((SELECT count(*) FROM planned) = jsonb_array_length($1::jsonb) AND (SELECT count(*) FROM stored) = jsonb_array_length($2::jsonb),
                          'batch store: fewer rows stored than given') AS rows_stored,
            ${streamNoticesSql('SELECT contact_id FROM stored')} AS notices`;
}

// The read side of the real-time stream: a contact's stream log, in id order. It is the contact's
// stream_events rows ('updated', 'counts', and the 'notification' copies of items that carry no
// stream id) and its inbox items that carry a stream id, each its own 'notification', shown as
// the item is now (a later 'updated' of it follows in the log either way). Both kinds draw their ids
// from one sequence under the contact's stream lock (events.ts), so one read of "id > last seen"
// serves live pushes and Last-Event-ID replay alike.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query, queryOne } from '../../base/db/sql.ts';
import { toInboxItemResponse, type InboxItemRow } from './inbox-items.ts';
import { STREAM_ID_SEQUENCE, type StreamEventKind } from './events.ts';

/**
 * How long the log can be replayed: stream_events rows older than this are pruned daily
 * (jobs/stream-prune.ts), and items older than this are not replayed. A client away longer
 * refetches its inbox.
 */
export const STREAM_RETENTION_DAYS = 7;

export interface StreamMessage {
  id: string;
  kind: StreamEventKind;
  payload: Record<string, unknown>;
}

/** The log after $2, oldest first, at most $3 events; items no older than $4 days. */
const READ_LOG = `SELECT id::text AS id, kind, payload, item FROM (
       SELECT id, kind, payload, NULL::jsonb AS item FROM stream_events WHERE contact_id = $1 AND id > $2::bigint
       UNION ALL
       SELECT stream_id, 'notification', NULL, to_jsonb(i) FROM inbox_items i
        WHERE contact_id = $1 AND stream_id > $2::bigint AND created_at >= now() - make_interval(days => $4)
     ) AS log
     ORDER BY log.id LIMIT $3`;
// IS NOT NULL: the predicate of inbox_items_stream, so the planner reads the max from that index.
const LOG_END = `SELECT greatest((SELECT max(id) FROM stream_events WHERE contact_id = $1),
    (SELECT max(stream_id) FROM inbox_items WHERE contact_id = $1 AND stream_id IS NOT NULL))::text AS id`;
const LAST_ID_DRAWN = `SELECT (CASE WHEN is_called THEN last_value ELSE last_value - 1 END)::text AS last
  FROM ${STREAM_ID_SEQUENCE}`;

/** The contact's log after `after`, oldest first, at most `limit` events. */
export async function readStreamLog(
  em: EntityManager,
  contactId: string,
  after: bigint,
  limit: number,
): Promise<StreamMessage[]> {
  const rows = await query<{
    id: string;
    kind: StreamEventKind;
    payload: Record<string, unknown> | null;
    item: InboxItemRow | null;
  }>(em, READ_LOG, [contactId, after.toString(), limit, STREAM_RETENTION_DAYS]);
  return rows.map((row) => ({
    id: row.id,
    kind: row.kind,
    payload: row.item ? { ...toInboxItemResponse(row.item) } : row.payload!,
  }));
}

/** The id of the contact's last stream event (0 when there is none): where a stream without Last-Event-ID starts. */
export async function streamLogEnd(em: EntityManager, contactId: string): Promise<bigint> {
  const row = await queryOne<{ id: string | null }>(em, LOG_END, [contactId]);
  return BigInt(row?.id ?? '0');
}

/** The last stream id drawn by anyone (committed or not): no Last-Event-ID can be beyond it. */
export async function lastStreamIdDrawn(em: EntityManager): Promise<bigint> {
  const row = await queryOne<{ last: string }>(em, LAST_ID_DRAWN);
  return BigInt(row?.last ?? '0');
}

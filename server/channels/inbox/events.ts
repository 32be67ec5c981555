// The write side of the real-time stream: every event a contact's stream shows has an id from
// stream_events' sequence (the SSE id, so Last-Event-ID can replay what a client missed). An inbox item
// is its own 'notification' (inbox_items.stream_id); every other event is a row of stream_events. New
// ids are announced by a pg_notify on STREAM_CHANNEL naming the contact, sent when the surrounding
// transaction commits, so every Herald process listening (see the stream hub) pushes them to its
// connected clients, whichever process wrote them. The read side is log.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, queryOne } from '../../base/db/sql.ts';

export const STREAM_CHANNEL = 'herald_stream';

/** Advisory-lock namespace of stream appends ('HSTR'); the second key is the contact. */
const STREAM_LOCK_NAMESPACE = 0x48535452;

export type StreamEventKind = 'notification' | 'updated' | 'counts';

/**
 * The NOTIFY payload: the contacts whose streams have new rows (listeners read the rows themselves).
 * One notice per statement, not per row: a delivery batch announces its 25 contacts at once (and
 * PostgreSQL sends identical notices of one transaction only once).
 */
export interface StreamNotice {
  contacts: string[];
}

/** Contacts per notice: 100 ids stay well under PostgreSQL's 8000-byte payload cap. */
const CONTACTS_PER_NOTICE = 100;

/** The sequence every stream id is drawn from (stream_events.id's, which inbox_items.stream_id shares). */
export const STREAM_ID_SEQUENCE = 'stream_events_id_seq';

/** SQL drawing the next stream id; only while holding the contact's stream lock (streamLockSql). */
export const NEXT_STREAM_ID_SQL = `nextval('${STREAM_ID_SEQUENCE}')`;

/**
 * SQL taking a contact's stream lock until commit (two-key advisory lock in Herald's own namespace).
 * Appends serialise on it, so a contact's ids become visible in increasing order: a listener that
 * re-reads "id > last seen" (live or after Last-Event-ID) can never skip a row that committed late
 * with a smaller id. A statement locking several contacts must take them in contact order, so two
 * transactions sharing contacts cannot deadlock.
 */
export function streamLockSql(contactIdSql: string): string {
  return `pg_advisory_xact_lock(${STREAM_LOCK_NAMESPACE}, hashtext(${contactIdSql}::text))`;
}

/**
 * SQL (a scalar subquery: the number of notices) announcing new stream rows of the contacts that
 * `contactIdsSql` selects (a query with a contact_id column); sent when the transaction commits.
 */
export function streamNoticesSql(contactIdsSql: string): string {
  return `(SELECT count(pg_notify('${STREAM_CHANNEL}', json_build_object('contacts', ids)::text))::int FROM (
            SELECT json_agg(contact_id::text) AS ids FROM (
              SELECT contact_id, (row_number() OVER (ORDER BY contact_id) - 1) / ${CONTACTS_PER_NOTICE} AS chunk
                FROM (SELECT DISTINCT contact_id FROM (${contactIdsSql}) AS announced) AS distinct_contacts
            ) AS numbered GROUP BY chunk
          ) AS notices)`;
}

// The INSERT reads its row from the lock CTE, so the lock is taken before the id is drawn, in the
// same round trip.
const APPEND_EVENT = `WITH locked AS (
       SELECT ${streamLockSql('$2::uuid')}
     ), inserted AS (
       INSERT INTO stream_events (tenant_id, contact_id, kind, payload) SELECT $1::uuid, $2::uuid, $3::text, $4::jsonb FROM locked RETURNING id, contact_id
     )
     SELECT id::text AS id, ${streamNoticesSql('SELECT contact_id FROM inserted')} AS notices FROM inserted`;

const PRUNE_EVENTS = `DELETE FROM stream_events WHERE created_at < now() - make_interval(days => $1)`;

/** Appends an event to a contact's stream; call it inside the transaction that made the change. */
export async function appendStreamEvent(
  em: EntityManager,
  event: { tenantId: string; contactId: string; kind: StreamEventKind; payload: Record<string, unknown> },
): Promise<string> {
  const row = await queryOne<{ id: string }>(em, APPEND_EVENT, [
    event.tenantId,
    event.contactId,
    event.kind,
    JSON.stringify(event.payload),
  ]);
  return row!.id;
}

/** Deletes the stream log's rows older than `days`, and returns how many. */
export async function pruneStreamEvents(em: EntityManager, days: number): Promise<number> {
  return execute(em, PRUNE_EVENTS, [days]);
}

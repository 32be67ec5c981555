// The write side of the real-time stream: every event a contact's stream shows is a row of
// stream_events (its id is the SSE id, so Last-Event-ID can replay what a client missed) and a
// pg_notify on STREAM_CHANNEL, sent when the surrounding transaction commits, so every Herald process
// listening (see the stream hub) pushes it to its connected clients, whichever process wrote it.
import type { EntityManager } from '@mikro-orm/postgresql';
import { queryOne } from '../db/sql.ts';

export const STREAM_CHANNEL = 'herald_stream';

/** Advisory-lock namespace of stream appends ('HSTR'); the second key is the contact. */
const STREAM_LOCK_NAMESPACE = 0x48535452;

export type StreamEventKind = 'notification' | 'updated' | 'counts';

/** The NOTIFY payload: small (PostgreSQL caps it at 8000 bytes); listeners load the row by id. */
export interface StreamNotice {
  id: string;
  contact_id: string;
}

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

/** SQL announcing a stored stream row (a StreamNotice on STREAM_CHANNEL, sent at commit). */
export function streamNoticeSql(idSql: string, contactIdSql: string): string {
  return `pg_notify('${STREAM_CHANNEL}', json_build_object('id', ${idSql}::text, 'contact_id', ${contactIdSql}::text)::text)`;
}

/** Appends an event to a contact's stream; call it inside the transaction that made the change. */
export async function appendStreamEvent(
  em: EntityManager,
  event: { tenantId: string; contactId: string; kind: StreamEventKind; payload: Record<string, unknown> },
): Promise<string> {
  // The INSERT reads its row from the lock CTE, so the lock is taken before the id is drawn, in the
  // same round trip.
  const row = await queryOne<{ id: string }>(
    em,
    `WITH locked AS (
       SELECT ${streamLockSql('$2::uuid')}
     ), inserted AS (
       INSERT INTO stream_events (tenant_id, contact_id, kind, payload) SELECT $1::uuid, $2::uuid, $3::text, $4::jsonb FROM locked RETURNING id
     )
     SELECT id::text AS id, ${streamNoticeSql('id', '$2::uuid')} FROM inserted`,
    [event.tenantId, event.contactId, event.kind, JSON.stringify(event.payload)],
  );
  return row!.id;
}

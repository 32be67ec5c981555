// The write side of the real-time stream: every event a contact's stream shows is a row of
// stream_events (its id is the SSE id, so Last-Event-ID can replay what a client missed) and a
// pg_notify on STREAM_CHANNEL, sent when the surrounding transaction commits, so every Herald process
// listening (see the stream hub) pushes it to its connected clients, whichever process wrote it.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query, queryOne } from '../db/sql.ts';

export const STREAM_CHANNEL = 'herald_stream';

/** Advisory-lock namespace of stream appends ('HSTR'); the second key is the contact. */
const STREAM_LOCK_NAMESPACE = 0x48535452;

export type StreamEventKind = 'notification' | 'updated' | 'counts';

/** The NOTIFY payload: small (PostgreSQL caps it at 8000 bytes); listeners load the row by id. */
export interface StreamNotice {
  id: string;
  contact_id: string;
}

/** Appends an event to a contact's stream; call it inside the transaction that made the change. */
export async function appendStreamEvent(
  em: EntityManager,
  event: { tenantId: string; contactId: string; kind: StreamEventKind; payload: Record<string, unknown> },
): Promise<string> {
  // Serialise appends per contact until commit, so a contact's ids become visible in increasing order:
  // a listener that re-reads "id > last seen" (live or after Last-Event-ID) can never skip a row
  // that committed late with a smaller id. The INSERT reads its row from the lock CTE, so the lock is
  // taken before the id is drawn, in the same round trip. Two-key form, in Herald's own namespace.
  const row = await queryOne<{ id: string }>(
    em,
    `WITH locked AS (
       SELECT pg_advisory_xact_lock(${STREAM_LOCK_NAMESPACE}, hashtext($2::uuid::text))
     ), inserted AS (
       INSERT INTO stream_events (tenant_id, contact_id, kind, payload) SELECT $1::uuid, $2::uuid, $3::text, $4::jsonb FROM locked RETURNING id
     )
     SELECT id::text AS id, pg_notify($5, json_build_object('id', id::text, 'contact_id', $2::uuid::text)::text) FROM inserted`,
    [event.tenantId, event.contactId, event.kind, JSON.stringify(event.payload), STREAM_CHANNEL],
  );
  return row!.id;
}

/**
 * appendStreamEvent for many events in one statement (the delivery worker's batch path): the same
 * rows and NOTIFY notices, ids in input order, under the same per-contact locks. The locks are taken
 * in contact order, so two batches sharing contacts cannot deadlock.
 */
export async function appendStreamEventsBulk(
  em: EntityManager,
  events: Array<{ tenantId: string; contactId: string; kind: StreamEventKind; payload: Record<string, unknown> }>,
): Promise<void> {
  if (events.length === 0) return;
  await query(
    em,
    `WITH input AS (
       SELECT * FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (tenant_id uuid, contact_id uuid, kind text, payload jsonb))
         WITH ORDINALITY AS x(tenant_id, contact_id, kind, payload, n)
     ), locked AS (
       SELECT count(pg_advisory_xact_lock(${STREAM_LOCK_NAMESPACE}, hashtext(contact_id::text))) AS n
         FROM (SELECT DISTINCT contact_id FROM input ORDER BY contact_id) AS contacts
     ), inserted AS (
       INSERT INTO stream_events (tenant_id, contact_id, kind, payload)
       SELECT i.tenant_id, i.contact_id, i.kind, i.payload FROM input i, locked ORDER BY i.n
       RETURNING id, contact_id
     )
     SELECT pg_notify($2, json_build_object('id', id::text, 'contact_id', contact_id::text)::text) FROM inserted ORDER BY id`,
    [JSON.stringify(events.map((e) => ({ tenant_id: e.tenantId, contact_id: e.contactId, kind: e.kind, payload: e.payload }))), STREAM_CHANNEL],
  );
}

// The inbox item as clients see it, and the unread-count stream event.
// integration point: the inbox read API (server/services/inbox.ts, branch `inbox`) exports
// inboxItemView and appendCounts with the same meaning; the lead swaps these two for those at merge.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query, queryOne } from '../db/sql.ts';
import { appendStreamEvent, STREAM_CHANNEL, type StreamEventKind } from '../stream/events.ts';

export interface InboxItemRow {
  id: string;
  tenant_id: string;
  contact_id: string;
  event_id: string | null;
  type_key: string;
  title: string;
  body: string;
  action_url: string | null;
  data: Record<string, unknown>;
  created_at: Date;
  seen_at: Date | null;
  read_at: Date | null;
  archived_at: Date | null;
}

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());

export function inboxItemView(row: InboxItemRow): Record<string, unknown> {
  return {
    id: row.id,
    event_id: row.event_id,
    type: row.type_key,
    title: row.title,
    body: row.body,
    action_url: row.action_url,
    data: row.data,
    created_at: iso(row.created_at),
    seen_at: iso(row.seen_at),
    read_at: iso(row.read_at),
    archived_at: iso(row.archived_at),
  };
}

/** Appends a 'counts' event with the contact's unread count; call it in the transaction that changed it. */
export async function appendCounts(em: EntityManager, tenantId: string, contactId: string): Promise<void> {
  const row = await queryOne<{ unread_count: number }>(
    em,
    `SELECT count(*)::int AS unread_count FROM inbox_items WHERE contact_id = $1 AND read_at IS NULL AND archived_at IS NULL`,
    [contactId],
  );
  await appendStreamEvent(em, { tenantId, contactId, kind: 'counts', payload: { unread_count: row?.unread_count ?? 0 } });
}

/**
 * appendStreamEvent (server/stream/events.ts) for many events in one statement: same rows, same
 * NOTIFY notice ({id, contact_id} on STREAM_CHANNEL), ids in input order. For the batch fast path.
 */
export async function appendStreamEventsBulk(
  em: EntityManager,
  events: Array<{ tenantId: string; contactId: string; kind: StreamEventKind; payload: Record<string, unknown> }>,
): Promise<void> {
  if (events.length === 0) return;
  await query(
    em,
    `WITH input AS (
       SELECT * FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (tenant_id uuid, contact_id uuid, kind text, payload jsonb)) WITH ORDINALITY AS x(tenant_id, contact_id, kind, payload, n)
     ), inserted AS (
       INSERT INTO stream_events (tenant_id, contact_id, kind, payload)
       SELECT tenant_id, contact_id, kind, payload FROM input ORDER BY n
       RETURNING id, contact_id
     )
     SELECT pg_notify($2, json_build_object('id', id::text, 'contact_id', contact_id::text)::text) FROM inserted ORDER BY id`,
    [JSON.stringify(events.map((e) => ({ tenant_id: e.tenantId, contact_id: e.contactId, kind: e.kind, payload: e.payload }))), STREAM_CHANNEL],
  );
}

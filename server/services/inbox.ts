// The in-app inbox of a contact: cursor-paged listing (newest first, over the UUIDv7 ids), unread
// counts, read/seen/archived marks and read-all. Every change is also appended to the contact's
// stream in the same transaction ('updated' with the item; read-all, which changes many items at
// once, 'counts'), so every open stream of the contact, on any Herald process, sees it once the change
// commits. The stream hub follows an 'updated' with the contact's counts.
import { emitWebhookEvent } from '../webhooks/emit.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../errors.ts';
import { query, queryOne } from '../db/sql.ts';
import { appendStreamEvent } from '../stream/events.ts';
import type { InboxCounts, InboxItemResponse, InboxListQuery, UpdateInboxItemRequest } from '../schemas/inbox.ts';

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
  created_at: Date | string;
  seen_at: Date | string | null;
  read_at: Date | string | null;
  archived_at: Date | string | null;
}

export const INBOX_COLUMNS = 'id, tenant_id, contact_id, event_id, type_key, title, body, action_url, data, created_at, seen_at, read_at, archived_at';

const iso = (value: Date | string | null): string | null => (value === null ? null : new Date(value).toISOString());

/** The item as the inbox list, PATCH and the stream's `notification`/`updated` events show it. */
export function inboxItemView(row: InboxItemRow): InboxItemResponse {
  return {
    id: row.id,
    event_id: row.event_id,
    type: row.type_key,
    title: row.title,
    body: row.body,
    action_url: row.action_url,
    data: row.data ?? {},
    created_at: iso(row.created_at)!,
    seen_at: iso(row.seen_at),
    read_at: iso(row.read_at),
    archived_at: iso(row.archived_at),
  };
}

/** Unread and unseen (unread and never seen) items, archived ones left out. */
export async function inboxCounts(em: EntityManager, contactId: string): Promise<InboxCounts> {
  // Both counts are of unread items: only those are visited, through the partial index inbox_items_unread
  // (a contact's read items, however many, are not).
  const row = await queryOne<{ unread_count: number; unseen_count: number }>(
    em,
    `SELECT count(*)::int AS unread_count, count(*) FILTER (WHERE seen_at IS NULL)::int AS unseen_count
       FROM inbox_items WHERE contact_id = $1 AND read_at IS NULL AND archived_at IS NULL`,
    [contactId],
  );
  return { unread_count: row?.unread_count ?? 0, unseen_count: row?.unseen_count ?? 0 };
}

export async function listInbox(
  em: EntityManager,
  contactId: string,
  filters: InboxListQuery,
): Promise<{ items: InboxItemResponse[]; next_cursor: string | null; unread_count: number }> {
  const rows = await query<InboxItemRow>(
    em,
    `SELECT ${INBOX_COLUMNS} FROM inbox_items
      WHERE contact_id = $1
        AND ($2::uuid IS NULL OR id < $2)
        AND (CASE $3 WHEN 'unread' THEN read_at IS NULL WHEN 'read' THEN read_at IS NOT NULL ELSE true END)
        AND (archived_at IS NOT NULL) = $4
      ORDER BY id DESC
      LIMIT $5`,
    [contactId, filters.cursor ?? null, filters.status, filters.archived, filters.limit + 1],
  );
  const page = rows.slice(0, filters.limit);
  const { unread_count } = await inboxCounts(em, contactId);
  return {
    items: page.map(inboxItemView),
    next_cursor: rows.length > filters.limit ? page[page.length - 1]!.id : null,
    unread_count,
  };
}

/**
 * Sets or clears read/seen/archived marks. Reading implies seeing. Appends 'updated' to the stream
 * when something changed; setting a mark that is already set keeps its first timestamp.
 */
export async function updateInboxItem(
  em: EntityManager,
  tenantId: string,
  contactId: string,
  itemId: string,
  changes: UpdateInboxItemRequest,
): Promise<InboxItemResponse> {
  return em.transactional(async (tx) => {
    const mark = (flag: boolean | undefined, column: string) =>
      flag === undefined ? column : flag ? `coalesce(${column}, now())` : 'NULL';
    const seenFlag = changes.read === true ? true : changes.seen;
    const row = await queryOne<InboxItemRow & { changed: boolean; became_read: boolean; became_archived: boolean }>(
      tx,
      `WITH before AS (
         SELECT id, seen_at, read_at, archived_at FROM inbox_items WHERE id = $1 AND contact_id = $2 FOR UPDATE
       )
       UPDATE inbox_items i SET
         read_at = ${mark(changes.read, 'i.read_at')},
         seen_at = ${mark(seenFlag, 'i.seen_at')},
         archived_at = ${mark(changes.archived, 'i.archived_at')}
         FROM before b
        WHERE i.id = b.id
        RETURNING ${INBOX_COLUMNS.split(', ').map((c) => `i.${c}`).join(', ')},
          (i.read_at, i.seen_at, i.archived_at) IS DISTINCT FROM (b.read_at, b.seen_at, b.archived_at) AS changed,
          b.read_at IS NULL AND i.read_at IS NOT NULL AS became_read,
          b.archived_at IS NULL AND i.archived_at IS NOT NULL AS became_archived`,
      [itemId, contactId],
    );
    if (!row) throw notFound('Notification');
    const item = inboxItemView(row);
    if (row.changed) await appendStreamEvent(tx, { tenantId, contactId, kind: 'updated', payload: { ...item } });
    const data = { contact_id: contactId, notification_id: item.id, event_id: item.event_id, type: item.type };
    if (row.became_read) await emitWebhookEvent(tx, tenantId, 'inbox.read', data);
    if (row.became_archived) await emitWebhookEvent(tx, tenantId, 'inbox.archived', data);
    return item;
  });
}

/** Marks every unread item read (archived ones too); appends one 'counts' event when any changed. */
export async function readAllInbox(em: EntityManager, tenantId: string, contactId: string): Promise<{ updated: number }> {
  return em.transactional(async (tx) => {
    const row = await queryOne<{ updated: number }>(
      tx,
      `WITH changed AS (
         UPDATE inbox_items SET read_at = now(), seen_at = coalesce(seen_at, now())
          WHERE contact_id = $1 AND read_at IS NULL
          RETURNING 1
       )
       SELECT count(*)::int AS updated FROM changed`,
      [contactId],
    );
    const updated = row?.updated ?? 0;
    if (updated > 0) {
      // Its counts are computed in the changing transaction: no item event of its own is on the stream for the hub to follow.
      const counts = await inboxCounts(tx, contactId);
      await appendStreamEvent(tx, { tenantId, contactId, kind: 'counts', payload: { ...counts } });
      await emitWebhookEvent(tx, tenantId, 'inbox.read', { contact_id: contactId, read_all: true, updated });
    }
    return { updated };
  });
}

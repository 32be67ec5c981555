// The in-app inbox of a contact: cursor-paged listing (newest first, over the UUIDv7 ids), unread
// counts, read/seen/archived marks and read-all. Every change is also appended to the contact's
// stream in the same transaction ('updated' with the item; read-all, which changes many items at
// once, 'counts'), so every open stream of the contact, on any Herald process, sees it once the change
// commits. The stream hub follows an 'updated' with the contact's counts.
import { emitWebhookEvent } from '../../webhooks/emit.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../base/errors.ts';
import { query, queryOne } from '../../base/db/sql.ts';
import { appendStreamEvent } from './events.ts';
import type { InboxItemResponse, InboxListQuery, UpdateInboxItemRequest } from '../../schemas/inbox.ts';
import { INBOX_COLUMNS, inboxCounts, toInboxItemResponse, type InboxItemRow } from './inbox-items.ts';

// server/channels/inbox/channel.ts stores items with the columns and row shape it imports from here.
export { INBOX_COLUMNS, type InboxItemRow };

/** A page, newest first: $2 the cursor (the last id of the previous page) or null, $3 the status, $4 archived. */
const LIST_ITEMS = `SELECT ${INBOX_COLUMNS} FROM inbox_items
      WHERE contact_id = $1
        AND ($2::uuid IS NULL OR id < $2)
        AND (CASE $3 WHEN 'unread' THEN read_at IS NULL WHEN 'read' THEN read_at IS NOT NULL ELSE true END)
        AND (archived_at IS NOT NULL) = $4
      ORDER BY id DESC
      LIMIT $5`;

/** Sets or clears the marks `changes` names on item $1 of contact $2; says what changed. */
function updateItemSql(changes: UpdateInboxItemRequest): string {
  const mark = (flag: boolean | undefined, column: string) =>
    flag === undefined ? column : flag ? `coalesce(${column}, now())` : 'NULL';
  const seenFlag = changes.read === true ? true : changes.seen;
  return `WITH before AS (
         SELECT id, seen_at, read_at, archived_at FROM inbox_items WHERE id = $1 AND contact_id = $2 FOR UPDATE
       )
       UPDATE inbox_items i SET
         read_at = ${mark(changes.read, 'i.read_at')},
         seen_at = ${mark(seenFlag, 'i.seen_at')},
         archived_at = ${mark(changes.archived, 'i.archived_at')}
         FROM before b
        WHERE i.id = b.id
        RETURNING ${INBOX_COLUMNS.split(', ')
          .map((c) => `i.${c}`)
          .join(', ')},
          (i.read_at, i.seen_at, i.archived_at) IS DISTINCT FROM (b.read_at, b.seen_at, b.archived_at) AS changed,
          b.read_at IS NULL AND i.read_at IS NOT NULL AS became_read,
          b.archived_at IS NULL AND i.archived_at IS NOT NULL AS became_archived`;
}

const READ_ALL = `WITH changed AS (
         UPDATE inbox_items SET read_at = now(), seen_at = coalesce(seen_at, now())
          WHERE contact_id = $1 AND read_at IS NULL
          RETURNING 1
       )
       SELECT count(*)::int AS updated FROM changed`;

export async function listInbox(
  em: EntityManager,
  contactId: string,
  filters: InboxListQuery,
): Promise<{ items: InboxItemResponse[]; next_cursor: string | null; unread_count: number }> {
  const rows = await query<InboxItemRow>(em, LIST_ITEMS, [
    contactId,
    filters.cursor ?? null,
    filters.status,
    filters.archived,
    filters.limit + 1,
  ]);
  const page = rows.slice(0, filters.limit);
  const { unread_count } = await inboxCounts(em, contactId);
  return {
    items: page.map(toInboxItemResponse),
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
    const row = await queryOne<InboxItemRow & { changed: boolean; became_read: boolean; became_archived: boolean }>(
      tx,
      updateItemSql(changes),
      [itemId, contactId],
    );
    if (!row) throw notFound('Notification');
    const item = toInboxItemResponse(row);
    if (row.changed) await appendStreamEvent(tx, { tenantId, contactId, kind: 'updated', payload: { ...item } });
    const data = { contact_id: contactId, notification_id: item.id, event_id: item.event_id, type: item.type };
    if (row.became_read) await emitWebhookEvent(tx, tenantId, 'inbox.read', data);
    if (row.became_archived) await emitWebhookEvent(tx, tenantId, 'inbox.archived', data);
    return item;
  });
}

/** Marks every unread item read (archived ones too); appends one 'counts' event when any changed. */
export async function readAllInbox(
  em: EntityManager,
  tenantId: string,
  contactId: string,
): Promise<{ updated: number }> {
  return em.transactional(async (tx) => {
    const row = await queryOne<{ updated: number }>(tx, READ_ALL, [contactId]);
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

// An inbox item as stored and as shown: the row, its columns, the response every reader shows it as
// (the inbox list, PATCH, and the stream's 'notification' and 'updated' events), and a contact's
// counts. Below the services, so that the stream's log and hub read items the way the inbox does.
import type { EntityManager } from '@mikro-orm/postgresql';
import { queryOne } from '../../base/db/sql.ts';
import type { InboxCounts, InboxItemResponse } from '../../schemas/inbox.ts';
import { toIsoTimestamp, toIsoTimestampOrNull } from '../../base/timestamps.ts';

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

export const INBOX_COLUMNS =
  'id, tenant_id, contact_id, event_id, type_key, title, body, action_url, data, created_at, seen_at, read_at, archived_at';

// Both counts are of unread items: only those are visited, through the partial index inbox_items_unread
// (a contact's read items, however many, are not).
const INBOX_COUNTS = `SELECT count(*)::int AS unread_count, count(*) FILTER (WHERE seen_at IS NULL)::int AS unseen_count
       FROM inbox_items WHERE contact_id = $1 AND read_at IS NULL AND archived_at IS NULL`;

/** The item as the inbox list, PATCH and the stream's `notification`/`updated` events show it. */
export function toInboxItemResponse(row: InboxItemRow): InboxItemResponse {
  return {
    id: row.id,
    event_id: row.event_id,
    type: row.type_key,
    title: row.title,
    body: row.body,
    action_url: row.action_url,
    data: row.data ?? {},
    created_at: toIsoTimestamp(row.created_at),
    seen_at: toIsoTimestampOrNull(row.seen_at),
    read_at: toIsoTimestampOrNull(row.read_at),
    archived_at: toIsoTimestampOrNull(row.archived_at),
  };
}

/** Unread and unseen (unread and never seen) items, archived ones left out. */
export async function inboxCounts(em: EntityManager, contactId: string): Promise<InboxCounts> {
  const row = await queryOne<{ unread_count: number; unseen_count: number }>(em, INBOX_COUNTS, [contactId]);
  return { unread_count: row?.unread_count ?? 0, unseen_count: row?.unseen_count ?? 0 };
}

// Retention of inbox items: read or archived items go at the install's retention age; unread ones are
// kept longer, to their own cap, since a contact who has not opened them may still come back for them.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute } from '../../base/db/sql.ts';

const PRUNE_INBOX_ITEMS = `DELETE FROM inbox_items WHERE id IN (
  SELECT id FROM inbox_items
   WHERE created_at < $1 AND (created_at < $2 OR read_at IS NOT NULL OR archived_at IS NOT NULL)
   ORDER BY created_at LIMIT $3)`;

/**
 * Deletes up to `limit` inbox items created before `readCutoff` that are read or archived, or before
 * `unreadCutoff` whatever their state; returns how many.
 */
export async function pruneInboxItemsBatch(
  em: EntityManager,
  readCutoff: Date,
  unreadCutoff: Date,
  limit: number,
): Promise<number> {
  return execute(em, PRUNE_INBOX_ITEMS, [readCutoff, unreadCutoff, limit]);
}

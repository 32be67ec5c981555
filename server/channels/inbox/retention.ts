// Retention of inbox items: read or archived items go at the install's retention age; unread ones are
// kept longer, to their own cap, since a contact who has not opened them may still come back for them.
// Items are found by id, which orders them by creation (base/ids.ts idFloor), through the primary key:
// no index on created_at costs every inbox write. Items past the cap all go, oldest first. Between the
// two ages most items are often unread, so the read ones there are found by walking that stretch once
// per run (a cursor the caller carries from batch to batch), never by scanning the unread ones again
// for every batch.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, queryOne } from '../../base/db/sql.ts';
import { idFloor } from '../../base/ids.ts';

const PRUNE_PAST_CAP = `DELETE FROM inbox_items WHERE id IN (
  SELECT id FROM inbox_items WHERE id < $1::uuid ORDER BY id LIMIT $2)`;

const PRUNE_READ = `WITH scanned AS (
    SELECT id, read_at IS NOT NULL OR archived_at IS NOT NULL AS done FROM inbox_items
     WHERE id >= $1::uuid AND id > $3::uuid AND id < $2::uuid
     ORDER BY id LIMIT $4
  ), gone AS (
    DELETE FROM inbox_items i USING scanned s WHERE i.id = s.id AND s.done RETURNING 1
  )
  SELECT (SELECT count(*) FROM scanned)::int AS scanned, (SELECT count(*) FROM gone)::int AS deleted,
         (SELECT id::text FROM scanned ORDER BY id DESC LIMIT 1) AS last_id`;

const NO_ID = '00000000-0000-0000-0000-000000000000';

/** Where a run's walk over the read stretch has got to: the last id it looked at; null before the first batch. */
export type InboxCursor = string | null;

/** Deletes up to `limit` inbox items created before `unreadCutoff`, read or not; returns how many. */
export async function pruneInboxItemsPastCap(em: EntityManager, unreadCutoff: Date, limit: number): Promise<number> {
  return execute(em, PRUNE_PAST_CAP, [idFloor(unreadCutoff.getTime()), limit]);
}

/**
 * Looks at the next `limit` items created from `unreadCutoff` to `readCutoff` after `cursor` and
 * deletes the read or archived ones; how many it looked at and deleted, and where to go on from.
 */
export async function pruneReadInboxItems(
  em: EntityManager,
  unreadCutoff: Date,
  readCutoff: Date,
  cursor: InboxCursor,
  limit: number,
): Promise<{ scanned: number; deleted: number; next: InboxCursor }> {
  const row = await queryOne<{ scanned: number; deleted: number; last_id: string | null }>(em, PRUNE_READ, [
    idFloor(unreadCutoff.getTime()),
    idFloor(readCutoff.getTime()),
    // Always a bound, so that a generic plan walks the primary key from the cursor on.
    cursor ?? NO_ID,
    limit,
  ]);
  return { scanned: row?.scanned ?? 0, deleted: row?.deleted ?? 0, next: row?.last_id ?? cursor };
}

// Retention (docs/operations.md): deletes final events past `retentionDays` with their deliveries, and
// inbox items past it that are read or archived (unread ones past `inboxUnreadRetentionDays`). Each
// batch is its own short statement, so no lock is held for long; a run stops when a batch comes back
// short or its time budget is spent, and the next run goes on. The queue's singleton policy keeps two
// processes from pruning at once.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../base/config.ts';
import { defineJob } from './types.ts';
import { pruneEventsBatch } from '../delivery/retention.ts';
import { pruneInboxItemsPastCap, pruneReadInboxItems, type InboxCursor } from '../channels/inbox/retention.ts';

const DAY_MS = 24 * 3600 * 1000;

export interface RetentionRun {
  batchSize: number;
  /** Wall-clock milliseconds a run may spend before it leaves the rest to the next run. */
  budgetMs: number;
}

export const RETENTION_RUN: RetentionRun = { batchSize: 1000, budgetMs: 60_000 };

/**
 * Runs batches until one is short or the budget (from `started`) is spent; each batch answers how
 * many rows it looked at and how many it deleted. Returns the rows deleted.
 */
async function inBatches(
  batch: () => Promise<{ scanned: number; deleted: number }>,
  run: RetentionRun,
  started: number,
): Promise<number> {
  let total = 0;
  for (;;) {
    const { scanned, deleted } = await batch();
    total += deleted;
    if (scanned < run.batchSize || Date.now() - started >= run.budgetMs) return total;
  }
}

const deletedAll = (deleted: number) => ({ scanned: deleted, deleted });

/** One retention run at `now`: the events (and their deliveries) and the inbox items it deleted. */
export async function pruneRetained(
  em: EntityManager,
  config: Pick<Config, 'retentionDays' | 'inboxUnreadRetentionDays'>,
  now: number,
  run: RetentionRun = RETENTION_RUN,
): Promise<{ events: number; inboxItems: number }> {
  const cutoff = new Date(now - config.retentionDays * DAY_MS);
  const unreadCutoff = new Date(now - Math.max(config.inboxUnreadRetentionDays, config.retentionDays) * DAY_MS);
  const started = Date.now();
  const events = await inBatches(
    async () => deletedAll(await pruneEventsBatch(em, cutoff, run.batchSize)),
    run,
    started,
  );
  let inboxItems = await inBatches(
    async () => deletedAll(await pruneInboxItemsPastCap(em, unreadCutoff, run.batchSize)),
    run,
    started,
  );
  let cursor: InboxCursor = null;
  inboxItems += await inBatches(
    async () => {
      const batch = await pruneReadInboxItems(em, unreadCutoff, cutoff, cursor, run.batchSize);
      cursor = batch.next;
      return batch;
    },
    run,
    started,
  );
  return { events, inboxItems };
}

export const retentionPrune = defineJob({
  name: 'retention-prune',
  queue: { retryLimit: 2, retryDelay: 300, policy: 'singleton', expireInSeconds: 3600 },
  schedule: '7 * * * *',
  handler: async (_jobs, runtime) => {
    const removed = await pruneRetained(runtime.orm.em.fork(), runtime.config, runtime.clock.now());
    runtime.logger.info('retention pruned', removed);
  },
});

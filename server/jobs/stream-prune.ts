// Prunes the stream log: stream_events exist for Last-Event-ID replay of short disconnects, so rows
// older than the log's retention have no reader left (a client away longer refetches its inbox).
// Inbox items stay: the log stops replaying them at the same age (stream/log.ts).
import { defineJob } from './types.ts';
import { STREAM_RETENTION_DAYS } from '../channels/inbox/log.ts';
import { pruneStreamEvents } from '../channels/inbox/events.ts';

export const streamPrune = defineJob({
  name: 'stream-events-prune',
  queue: { retryLimit: 2, retryDelay: 300, policy: 'singleton' },
  schedule: '23 3 * * *',
  handler: async (_jobs, runtime) => {
    const em = runtime.orm.em.fork();
    const removed = await pruneStreamEvents(em, STREAM_RETENTION_DAYS);
    runtime.logger.info('stream events pruned', { removed });
  },
});

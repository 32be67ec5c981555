// Prunes idle rate-limit buckets. Subjects include client IPs and attempted emails (chosen by whoever
// calls), so without pruning the table grows without bound. A bucket idle for a day has refilled to
// its burst under every policy, so deleting it changes nothing: it is recreated full on next use.
import { defineJob } from './types.ts';
import { pruneIdleBuckets } from '../base/rate-limit.ts';

export const RATE_LIMIT_IDLE_MS = 24 * 3600 * 1000;

export const rateLimitPrune = defineJob({
  name: 'rate-limit-buckets-prune',
  queue: { retryLimit: 2, retryDelay: 300, policy: 'singleton' },
  schedule: '41 * * * *',
  handler: async (_jobs, runtime) => {
    const removed = await pruneIdleBuckets(runtime.orm.em.fork(), runtime.clock.now() - RATE_LIMIT_IDLE_MS);
    runtime.logger.info('idle rate-limit buckets pruned', { removed });
  },
});

// Hourly: deletes Idempotency-Key records past their 24 h.
import { defineJob } from './types.ts';
import { pruneIdempotencyKeys } from '../delivery/trigger/idempotency.ts';

export const pruneIdempotencyKeysJob = defineJob({
  name: 'prune-idempotency-keys',
  queue: { retryLimit: 2 },
  schedule: '17 * * * *',
  handler: async (_jobs, runtime) => {
    const removed = await pruneIdempotencyKeys(runtime.orm.em.fork(), runtime.clock.now());
    if (removed > 0) runtime.logger.info('idempotency keys pruned', { removed });
  },
});

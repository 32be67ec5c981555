// Hourly: applies kept delivery receipts whose delivery has appeared since (one kept while the send's
// store was still committing), and deletes those that waited a day for a delivery that never came.
import { defineJob } from './types.ts';
import { sweepEarlyReceipts } from '../delivery/early-receipts.ts';

export const earlyReceiptsSweep = defineJob({
  name: 'early-receipts-sweep',
  queue: { retryLimit: 2, retryDelay: 300, policy: 'singleton' },
  schedule: '29 * * * *',
  handler: async (_jobs, runtime) => {
    const swept = await sweepEarlyReceipts(runtime.orm.em.fork());
    if (swept.applied > 0 || swept.pruned > 0) runtime.logger.info('early delivery receipts swept', swept);
  },
});

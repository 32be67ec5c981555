// The delivery workers: one job per event (its id is the event id), fetched in batches and settled per
// job, retried with exponential backoff and jitter; exhausted jobs go to the dead-letter queue, whose
// worker marks what is still pending as failed. A heartbeat lets a crashed worker's jobs be retried
// by another process soon instead of after the job's expiry.
import type { JobResult } from 'pg-boss';
import { defineJob } from './types.ts';
import {
  DELIVER_EVENT_DEAD_QUEUE,
  DELIVER_EVENT_QUEUE,
  DELIVERY_RETRY_DELAY_MAX_SECONDS,
  DELIVERY_RETRY_LIMIT,
  type DeliverEventJob,
} from '../delivery/queues.ts';
import { deliverEvent, finaliseExhaustedEvent, RetryableDeliveryError } from '../delivery/worker.ts';
import { deliverInboxBatch } from '../delivery/batch.ts';

export const deliverEventJob = defineJob<DeliverEventJob>({
  name: DELIVER_EVENT_QUEUE,
  queue: {
    retryLimit: DELIVERY_RETRY_LIMIT,
    retryBackoff: true,
    retryDelay: 1,
    retryDelayMax: DELIVERY_RETRY_DELAY_MAX_SECONDS,
    deadLetter: DELIVER_EVENT_DEAD_QUEUE,
    expireInSeconds: 300,
    heartbeatSeconds: 10,
    notify: true,
  },
  work: (config) => ({
    batchSize: 25,
    localConcurrency: config.workerConcurrency,
    perJobResults: true,
    burstWhenBatchFull: true,
    // Retries are not announced by NOTIFY: poll for them often enough.
    notifyPollingIntervalSeconds: 2,
  }),
  handler: async (jobs, runtime) => {
    // Fast path first: new all-inbox events of the batch in one transaction; the rest (and everything,
    // should the fast path fail) one by one, each with its own failure isolation and retry.
    let settled = new Set<string>();
    try {
      settled = await deliverInboxBatch(runtime, [...new Set(jobs.map((j) => j.data.event_id))]);
    } catch (error) {
      runtime.logger.warn('batch delivery fell back to per-event delivery', { error: error instanceof Error ? error.message : String(error) });
    }
    const results: JobResult[] = [];
    for (const job of jobs) {
      if (settled.has(job.data.event_id)) {
        results.push({ id: job.id, status: 'completed' });
        continue;
      }
      try {
        await deliverEvent(runtime, job.data.event_id, { finalAttempt: job.retryCount >= DELIVERY_RETRY_LIMIT });
        results.push({ id: job.id, status: 'completed' });
      } catch (error) {
        if (!(error instanceof RetryableDeliveryError)) {
          runtime.logger.warn('delivery job failed', { event_id: job.data.event_id, error: error instanceof Error ? error.message : String(error) });
        }
        results.push({ id: job.id, status: 'failed', output: { message: error instanceof Error ? error.message : String(error) } });
      }
    }
    return results;
  },
});

export const deliverEventDeadJob = defineJob<DeliverEventJob>({
  name: DELIVER_EVENT_DEAD_QUEUE,
  queue: { retryLimit: DELIVERY_RETRY_LIMIT, retryBackoff: true, retryDelayMax: DELIVERY_RETRY_DELAY_MAX_SECONDS, notify: true },
  work: { batchSize: 10 },
  handler: async (jobs, runtime) => {
    for (const job of jobs) await finaliseExhaustedEvent(runtime, job.data.event_id);
  },
});

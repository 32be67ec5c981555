// The delivery workers: one job per event (its id is the event id), fetched in batches and settled per
// job, retried with exponential backoff and jitter; exhausted jobs go to the dead-letter queue, whose
// worker marks what is still pending as failed. A heartbeat lets a crashed worker's jobs be retried
// by another process soon instead of after the job's expiry.
//
// Settling: the batch fast path completes the jobs of the events it stores in the same statement
// (delivery/complete.ts), the handler fails the jobs of failed events itself (pg-boss `fail`, fenced
// to the attempt it fetched), and pg-boss completes the rest of the batch when the handler returns.
// That completion finds its jobs by id in the queue's primary key. pg-boss's per-job-results
// completion (perJobResults) joins a JSON recordset instead, and with the statistics of a queue that
// has just filled up (a trigger burst, before autovacuum analyses it) PostgreSQL planned that join as
// a scan of every job of the queue: 43 ms per batch at a backlog of 9,200 where the lookup by id
// takes 0.6 ms.
import type { Job } from 'pg-boss';
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
import type { Runtime } from '../runtime.ts';

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
    burstWhenBatchFull: true,
    // Retries are not announced by NOTIFY: poll for them often enough.
    notifyPollingIntervalSeconds: 2,
  }),
  handler: async (jobs, runtime) => {
    // Fast path first: new all-inbox events of the batch, stored by one statement; the rest (and everything,
    // should the fast path fail) one by one, each with its own failure isolation and retry.
    let settled = new Set<string>();
    try {
      settled = await deliverInboxBatch(runtime, jobs);
    } catch (error) {
      runtime.logger.warn('batch delivery fell back to per-event delivery', { error: error instanceof Error ? error.message : String(error) });
    }
    for (const job of jobs) {
      if (settled.has(job.data.event_id)) continue;
      try {
        await deliverEvent(runtime, job.data.event_id, { finalAttempt: job.retryCount >= DELIVERY_RETRY_LIMIT });
      } catch (error) {
        if (!(error instanceof RetryableDeliveryError)) {
          runtime.logger.warn('delivery job failed', { event_id: job.data.event_id, error: error instanceof Error ? error.message : String(error) });
        }
        await failJob(runtime.boss!, job, error);
      }
    }
    // Returning completes the batch's jobs that are still active: all but the ones failed above.
  },
});

/** Fails one job of the batch (retried with backoff, or dead-lettered when out of retries). */
async function failJob(boss: NonNullable<Runtime['boss']>, job: Job<DeliverEventJob>, error: unknown): Promise<void> {
  await boss.fail(DELIVER_EVENT_QUEUE, { id: job.id, retryCount: job.retryCount }, { message: error instanceof Error ? error.message : String(error) });
}

export const deliverEventDeadJob = defineJob<DeliverEventJob>({
  name: DELIVER_EVENT_DEAD_QUEUE,
  queue: { retryLimit: DELIVERY_RETRY_LIMIT, retryBackoff: true, retryDelayMax: DELIVERY_RETRY_DELAY_MAX_SECONDS, notify: true },
  work: { batchSize: 10 },
  handler: async (jobs, runtime) => {
    for (const job of jobs) await finaliseExhaustedEvent(runtime, job.data.event_id);
  },
});

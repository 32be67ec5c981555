// The delivery workers: a job carries one event, or up to 25 inbox-only events of one tenant
// (delivery/queues.ts; its id is its first event's id). Jobs are fetched in batches and settled per
// job, retried with exponential backoff and jitter; exhausted jobs go to the dead-letter queue, whose
// worker marks what is still pending as failed. A heartbeat lets a crashed worker's jobs be retried
// by another process soon instead of after the job's expiry. A retried job delivers only what is not
// final yet: its events already delivered are settled at once.
//
// Settling: the batched run completes the jobs whose events it settles in the same statement
// (delivery/complete.ts), the handler fails the jobs of failed events itself (pg-boss `fail`, fenced
// to the attempt it fetched), and pg-boss completes the rest of the batch when the handler returns.
// That completion finds its jobs by id in the queue's primary key. pg-boss's per-job-results
// completion (perJobResults) is not used: it joins a JSON recordset, which PostgreSQL can plan as a
// scan of every job of the queue when the queue's statistics predate a burst of triggers (before
// autovacuum analyses it), and a large backlog then makes every batch's completion slow.
//
// A process fetches up to workerConcurrency batches at once, so that remote sends overlap their
// network waits. Its batched runs, though, wait on no network: a load and a store statement over up to
// 625 events, and their rendering in between, on the process's one thread. One run more than there
// are cores keeps every core busy in PostgreSQL while a run renders; more than that does not store a
// broadcast any sooner, it only lengthens PostgreSQL's run queue, where every other statement waits
// too, the commits of other tenants' triggers among them. So a batched run holds one of
// inboxStoreConcurrency permits (the cores plus one, by default). A fetched batch's triggers' jobs and
// its broadcasts' jobs (delivery/queues.ts isBulkJob) are two runs: broadcasts' runs hold all but one
// of the permits at most, so that a triggers' run finds that one free while a broadcast is stored; and
// a triggers' run takes the next permit before them, unless one of those has waited BULK_PATIENCE_MS.
import { availableParallelism } from 'node:os';
import type { Job } from 'pg-boss';
import { defineJob } from './types.ts';
import {
  DELIVER_EVENT_DEAD_QUEUE,
  DELIVER_EVENT_QUEUE,
  eventIdsOf,
  isBulkJob,
  type DeliverEventJob,
} from '../delivery/queues.ts';
import { deliverEvent, RetryableDeliveryError } from '../delivery/runs/event.ts';
import { deliverInboxBatch, type InboxBatchResult } from '../delivery/runs/batch.ts';
import { deliverRemoteBatch, type RemoteBatchResult } from '../delivery/runs/remote.ts';
import { finaliseExhaustedEvent } from '../delivery/stages/rollup.ts';
import type { Config } from '../base/config.ts';
import type { ChannelContext } from '../channels/types.ts';
import { isDatabaseUnavailable } from '../base/db/availability.ts';
import { Permits } from '../delivery/permits.ts';
import { deliveryRetryLimit, deliveryRetryPolicy, rescheduleRetry } from '../delivery/retry.ts';

export const deliverEventJob = defineJob<DeliverEventJob>({
  name: DELIVER_EVENT_QUEUE,
  queue: {
    deadLetter: DELIVER_EVENT_DEAD_QUEUE,
    expireInSeconds: 300,
    heartbeatSeconds: 10,
    notify: true,
  },
  // Retried on the install's schedule (delivery/retry.ts), which outlasts a relay's or provider's outage.
  configuredQueue: deliveryRetryPolicy,
  work: (config) => ({
    batchSize: 25,
    localConcurrency: config.workerConcurrency,
    burstWhenBatchFull: true,
    // Retries are not announced by NOTIFY: poll for them often enough.
    notifyPollingIntervalSeconds: 2,
  }),
  // A fetched batch (up to 25 jobs of up to EVENTS_PER_DELIVERY_JOB events) is one load and one store
  // statement in the batched run, whatever its size: splitting it into smaller groups only adds statements.
  // Returning completes the batch's jobs that are still active: all but the ones deliverJobs failed.
  handler: (jobs, runtime) => deliverJobs(runtime, jobs),
});

/**
 * Delivers a batch of jobs. The batched run first: new all-inbox events, stored by one statement; then
 * the batched remote run: new events of types without a workflow, planned in one transaction and sent
 * side by side in another; the rest (and everything, should a batched run fail before sending) one by
 * one, each with its own failure isolation. A job
 * with an event worth retrying is failed (retried with backoff); its events already final are not
 * delivered again when it is.
 */
async function deliverJobs(runtime: ChannelContext, jobs: Job<DeliverEventJob>[]): Promise<void> {
  const retryLimit = deliveryRetryLimit(runtime.config);
  const inbox = await deliverInboxUnderPermits(runtime, jobs);
  const { settled } = inbox;
  let remote: RemoteBatchResult = { settled: new Set(), retryErrors: new Map() };
  try {
    remote = await deliverRemoteBatch(
      runtime,
      jobs.flatMap((job) =>
        eventIdsOf(job.data)
          .filter((id) => !settled.has(id))
          .map((id) => ({ id, finalAttempt: job.retryCount >= retryLimit })),
      ),
      inbox.left,
    );
  } catch (error) {
    noteFailure(runtime, 'remote batch delivery fell back to per-event delivery', error);
  }
  for (const job of jobs) {
    const errors: string[] = [];
    for (const eventId of eventIdsOf(job.data)) {
      const retry = remote.retryErrors.get(eventId);
      if (retry) errors.push(`${eventId}: ${retry.join('; ')}`);
      if (settled.has(eventId) || remote.settled.has(eventId)) continue;
      try {
        await deliverEvent(runtime, eventId, { finalAttempt: job.retryCount >= retryLimit });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (!(error instanceof RetryableDeliveryError))
          noteFailure(runtime, 'delivery job failed', error, { event_id: eventId });
        errors.push(`${eventId}: ${message}`);
      }
    }
    if (errors.length > 0) await failJob(runtime, job, errors.join('; '));
  }
}

/** How long a batch of broadcast jobs lets batches with a trigger's job go first: well inside the jobs' 300 s expiry. */
export const BULK_PATIENCE_MS = 10_000;

const permitsByRuntime = new WeakMap<ChannelContext, Permits>();

/** How many batched runs a process runs at once: inboxStoreConcurrency (the cores plus one), no more than the batches it fetches at once. */
export function inboxStorePermitCount(config: Config): number {
  return Math.min(config.workerConcurrency, config.inboxStoreConcurrency ?? availableParallelism() + 1);
}

function batchPermits(runtime: ChannelContext): Permits {
  let permits = permitsByRuntime.get(runtime);
  if (!permits) {
    const size = inboxStorePermitCount(runtime.config);
    permits = new Permits(size, { bulkPatienceMs: BULK_PATIENCE_MS, bulkSize: Math.max(1, size - 1) });
    permitsByRuntime.set(runtime, permits);
  }
  return permits;
}

/**
 * The batched inbox runs of a fetched batch: its triggers' jobs and its broadcasts' jobs run apart, each
 * under its own kind of permit. pg-boss fills a batch with a broadcast's lower-priority jobs after the
 * triggers' ones, and those must not ride on the permit kept for triggers. A run that fails leaves its
 * events to the runs after it (per-event delivery at the last).
 */
async function deliverInboxUnderPermits(
  runtime: ChannelContext,
  jobs: Job<DeliverEventJob>[],
): Promise<InboxBatchResult> {
  const permits = batchPermits(runtime);
  const runs = splitByUrgency(jobs).map(({ urgent, jobs: part }) =>
    permits
      .run(urgent, () => deliverInboxBatch(runtime, part))
      .catch((error: unknown): InboxBatchResult => {
        noteFailure(runtime, 'batch delivery fell back to per-event delivery', error);
        return { settled: new Set(), left: new Map() };
      }),
  );
  const inbox: InboxBatchResult = { settled: new Set(), left: new Map() };
  for (const { settled, left } of await Promise.all(runs)) {
    for (const id of settled) inbox.settled.add(id);
    for (const [id, event] of left) inbox.left.set(id, event);
  }
  return inbox;
}

/** A batch's triggers' jobs (urgent) and its broadcasts' jobs, each part only when it has jobs. */
export function splitByUrgency<T extends { data: DeliverEventJob }>(jobs: T[]): Array<{ urgent: boolean; jobs: T[] }> {
  const urgent = jobs.filter((job) => !isBulkJob(job.data));
  const bulk = jobs.filter((job) => isBulkJob(job.data));
  return [
    { urgent: true, jobs: urgent },
    { urgent: false, jobs: bulk },
  ].filter((part) => part.jobs.length > 0);
}

/**
 * Logs a delivery failure, except one that says the database is unreachable during an outage already
 * logged (once for the whole outage, db/availability.ts): its job is retried once the outage is over.
 */
function noteFailure(
  runtime: ChannelContext,
  message: string,
  error: unknown,
  fields: Record<string, unknown> = {},
): void {
  if (isDatabaseUnavailable(error) && !runtime.availability.available) return;
  runtime.logger.warn(message, { ...fields, error: error instanceof Error ? error.message : String(error) });
}

/**
 * Fails one job of the batch: pg-boss retries it or, out of retries, dead-letters it; a retry is then
 * moved to its time on the install's schedule.
 */
async function failJob(runtime: ChannelContext, job: Job<DeliverEventJob>, message: string): Promise<void> {
  await runtime.boss!.fail(DELIVER_EVENT_QUEUE, { id: job.id, retryCount: job.retryCount }, { message });
  await rescheduleRetry(runtime.orm.em.fork(), runtime.config, job, eventIdsOf(job.data)).catch((error) =>
    noteFailure(runtime, 'delivery retry kept its first wait', error, { job_id: job.id }),
  );
}

const DEAD_LETTER_RETRY_LIMIT = 5;
const DEAD_LETTER_RETRY_DELAY_MAX_SECONDS = 300;

export const deliverEventDeadJob = defineJob<DeliverEventJob>({
  name: DELIVER_EVENT_DEAD_QUEUE,
  // Finalising is a database write: retried soon, with backoff, while the database is away.
  queue: {
    retryLimit: DEAD_LETTER_RETRY_LIMIT,
    retryBackoff: true,
    retryDelayMax: DEAD_LETTER_RETRY_DELAY_MAX_SECONDS,
    notify: true,
  },
  work: { batchSize: 10 },
  handler: async (jobs, runtime) => {
    for (const job of jobs) for (const eventId of eventIdsOf(job.data)) await finaliseExhaustedEvent(runtime, eventId);
  },
});

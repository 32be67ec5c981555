// The shape of a background job: its queue settings and its worker. Every job Herald runs is listed in
// server/jobs/index.ts; features add their own definition files next to this one.
import type { Job, Queue, WorkOptions } from 'pg-boss';
import type { Runtime } from '../runtime.ts';

export interface JobDefinition<T extends object = object> {
  /** The pg-boss queue name. */
  name: string;
  /** Queue settings: retries, backoff, expiry, dead letter queue, notify. */
  queue: Omit<Queue, 'name'>;
  /** A cron schedule (pg-boss schedule) that enqueues this job periodically, e.g. '17 3 * * *'. */
  schedule?: string;
  /** Worker options (batch size, concurrency, polling). */
  work?: WorkOptions;
  /** Handles one batch. Throwing fails (and retries) every job of the batch. */
  handler: (jobs: Job<T>[], runtime: Runtime) => Promise<void>;
}

export function defineJob<T extends object>(definition: JobDefinition<T>): JobDefinition<T> {
  return definition;
}

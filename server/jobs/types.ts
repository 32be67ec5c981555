// The shape of a background job: its queue settings and its worker. Every job Herald runs is listed in
// server/jobs/index.ts; features add their own definition files next to this one.
import type { Job, Queue, WorkOptions } from 'pg-boss';
import type { Config } from '../base/config.ts';
import type { ChannelContext } from '../channels/types.ts';

export interface JobDefinition<T extends object = object> {
  /** The pg-boss queue name. */
  name: string;
  /** Queue settings: retries, backoff, expiry, dead letter queue, notify. */
  queue: Omit<Queue, 'name'>;
  /** Queue settings the install's configuration decides (a retry schedule): applied over `queue` at every start. */
  configuredQueue?: (config: Config) => Partial<Omit<Queue, 'name' | 'policy' | 'partition'>>;
  /** Worker options (batch size, concurrency, polling); a function when they depend on the config. */
  work?: WorkOptions | ((config: Config) => WorkOptions);
  /** A cron expression: the job is also sent on that schedule (by worker processes). */
  schedule?: string;
  /**
   * Handles one batch. Returning completes every job of the batch still active; throwing fails (and
   * retries) them all. To fail some jobs only, the handler fails them itself (pg-boss `fail`).
   */
  handler: (jobs: Job<T>[], runtime: ChannelContext) => Promise<void>;
}

export function defineJob<T extends object>(definition: JobDefinition<T>): JobDefinition<T> {
  return definition;
}

// The delivery queues (their retry schedule: retry.ts), shared by the trigger (which enqueues) and the workers.
export const DELIVER_EVENT_QUEUE = 'deliver-event';
/** Jobs whose retries are exhausted land here; its worker finalises the event's deliveries as failed. */
export const DELIVER_EVENT_DEAD_QUEUE = 'deliver-event-dead';

/**
 * The most events one delivery job carries (server/delivery/enqueue.ts). Events that can only reach
 * the inbox share jobs: their delivery is a database write, small beside the queue's own work per job
 * (the fetch, the completion), which a shared job pays once for all its events.
 */
export const EVENTS_PER_DELIVERY_JOB = 25;

/**
 * The most events with a remote channel (email, push) of a type without a workflow one delivery job
 * carries. A fetched batch's such events are planned, claimed and recorded by a few statements whatever
 * their number, and sent side by side, so several per job cut the database's work per message. Not
 * more: a fetched batch holds a worker slot until its slowest send returns, and a tenant's SMTP host
 * that swallows connections makes a batch of one tenant's messages (25 jobs of 4: 100) wait for its
 * pooled connections to time out round after round (10 s each): with the default 20 connections
 * (smtpConnections), 50 s, inside the job's 300 s expiry. With fewer than 4 it can outlive the expiry:
 * the job's retry then waits for this run's locks (the events', or the deliveries' once stored) and
 * sends nothing twice (run-remote.ts). A job whose send failed retryably is retried whole; its events
 * already final are passed over. A workflow's events have a job each (stages/plan.ts eventsPerJobSql).
 */
export const REMOTE_EVENTS_PER_DELIVERY_JOB = 4;

/**
 * A delivery job: the events to deliver, all of one tenant. `bulk`: a broadcast's job, which yields to
 * triggers' jobs (enqueue.ts). `event_id` is the shape of the jobs enqueued before jobs could carry
 * several events; a queue upgraded with such jobs still waiting delivers them too (eventIdsOf).
 */
export type DeliverEventJob = { event_ids: string[]; bulk?: true } | { event_id: string };

/** pg-boss fetches higher priorities first; a trigger's jobs have its default, 0. */
export const BULK_JOB_PRIORITY = -1;

/** A broadcast's job, not a trigger's. */
export function isBulkJob(job: DeliverEventJob): boolean {
  return 'bulk' in job && job.bulk === true;
}

/** The events a delivery job carries. */
export function eventIdsOf(job: DeliverEventJob): string[] {
  return 'event_ids' in job ? job.event_ids : [job.event_id];
}

// The delivery queues and their retry policy, shared by the trigger (which enqueues) and the workers.
export const DELIVER_EVENT_QUEUE = 'deliver-event';
/** Jobs whose retries are exhausted land here; its worker finalises the event's deliveries as failed. */
export const DELIVER_EVENT_DEAD_QUEUE = 'deliver-event-dead';

/** Attempts after the first; with backoff the waits are about 1, 2, 4, 8, 16 s (jittered, capped). */
export const DELIVERY_RETRY_LIMIT = 5;
export const DELIVERY_RETRY_DELAY_MAX_SECONDS = 300;

export interface DeliverEventJob {
  event_id: string;
}

// The statuses of an event and of a delivery, declared once: the API's enums, the roll-up, the
// workers, the metrics and the CLI read them from here.

export const EVENT_STATUSES = [
  'scheduled',
  'queued',
  'processing',
  'delivered',
  'partially_delivered',
  'failed',
  'skipped',
  'canceled',
  'digested',
] as const;

/** Event statuses a run still moves on from; every other one is final. */
const OPEN_EVENT_STATUSES: ReadonlyArray<(typeof EVENT_STATUSES)[number]> = ['scheduled', 'queued', 'processing'];

/** Event statuses no run changes again. */
export const FINAL_EVENT_STATUSES: ReadonlySet<string> = new Set(
  EVENT_STATUSES.filter((status) => !OPEN_EVENT_STATUSES.includes(status)),
);

export const DELIVERY_STATUSES = [
  'pending',
  'sent',
  'delivered',
  'failed',
  'skipped',
  'bounced',
  'complained',
] as const;

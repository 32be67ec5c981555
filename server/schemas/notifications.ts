// Shapes of the trigger (POST /v1/notifications), the event status and the activity log.
import { z } from 'zod';
import { Channel, cursorPage, externalId, idParam, isoDateTime, resourceKey } from './common.ts';
import { CreateContactRequest } from './contacts.ts';
import { isUuid } from '../base/ids.ts';
import { DELIVERY_STATUSES, EVENT_STATUSES } from '../base/statuses.ts';
import { StepView } from './workflows.ts';

/** A recipient: an external_id, or a contact's fields (upserted by the trigger). */
export const Recipient = z.union([externalId, CreateContactRequest]).meta({ id: 'Recipient' });
export type Recipient = z.infer<typeof Recipient>;

export const TriggerRequest = z
  .object({
    type: resourceKey,
    recipients: z
      .array(Recipient)
      .min(1, 'at least one recipient is required')
      .max(100, 'at most 100 recipients per trigger'),
    variables: z.record(z.string(), z.unknown()).default({}),
    /** Delivered in full to the recipient; masked ("********") everywhere Herald shows the event. */
    secret_variables: z.record(z.string(), z.unknown()).default({}),
    brand: resourceKey.optional(),
    /** Narrows the type's channel defaults; cannot enable a channel the type has switched off. */
    channels: z.array(Channel).min(1).max(4).optional(),
    send_at: isoDateTime
      .optional()
      .describe('Deliver at this time (RFC 3339, at most 90 days ahead; a past time means now)'),
    cancellation_key: z
      .string()
      .min(1)
      .max(128)
      .optional()
      .describe('Cancels the events with POST /v1/notifications/cancel'),
  })
  .meta({ id: 'TriggerRequest' });
export type TriggerRequest = z.infer<typeof TriggerRequest>;

export const EventStatus = z.enum(EVENT_STATUSES).meta({ id: 'EventStatus' });
export type EventStatus = z.infer<typeof EventStatus>;

export const DeliveryStatus = z.enum(DELIVERY_STATUSES).meta({ id: 'DeliveryStatus' });
export type DeliveryStatus = z.infer<typeof DeliveryStatus>;

export const TriggeredEvent = z
  .object({
    event_id: z.string(),
    external_id: z.string(),
    contact_id: z.string(),
    status: z.enum(['queued', 'scheduled']),
  })
  .meta({ id: 'TriggeredEvent' });

export const TriggerResponse = z.object({ events: z.array(TriggeredEvent) }).meta({ id: 'TriggerResponse' });
export type TriggerResponse = z.infer<typeof TriggerResponse>;

export const ProviderAttempt = z
  .object({
    at: isoDateTime,
    provider: z.string(),
    outcome: z
      .enum(['sent', 'failed', 'skipped'])
      .describe('skipped: not asked (its circuit open, or paused by Retry-After)'),
    error: z.string().nullable(),
  })
  .meta({ id: 'ProviderAttempt' });

export const DeliveryResponse = z
  .object({
    channel: Channel,
    status: DeliveryStatus,
    reason: z.string().nullable(),
    provider: z.string().nullable(),
    attempts: z.number().int(),
    last_error: z.string().nullable(),
    provider_attempts: z
      .array(ProviderAttempt)
      .describe('Every provider asked, in order, over all attempts: a failover shows as several'),
    /** When a delivery that failed for now is tried again (deliveryRetrySchedule); null otherwise. */
    next_attempt_at: isoDateTime.nullable(),
    updated_at: isoDateTime,
  })
  .meta({ id: 'DeliveryResponse' });

export const EventResponse = z
  .object({
    event_id: z.string(),
    type: z.string(),
    external_id: z.string(),
    contact_id: z.string().nullable(),
    /** The broadcast that created the event; null for a trigger's. */
    broadcast_id: z.string().nullable(),
    status: EventStatus,
    created_at: isoDateTime,
    updated_at: isoDateTime,
    /** Trigger variables; secret variables appear with the value "********". */
    variables: z.record(z.string(), z.unknown()),
    deliveries: z.array(DeliveryResponse),
    send_at: isoDateTime.nullable(),
    cancellation_key: z.string().nullable(),
    /** For a `digested` event: the event whose digest it joined. */
    digest_event_id: z.string().nullable(),
    /** The workflow's steps and their progress; empty for a type without a workflow. */
    steps: z.array(StepView),
  })
  .meta({ id: 'EventResponse' });
export type EventResponse = z.infer<typeof EventResponse>;

export const EventPage = z
  .object({ items: z.array(EventResponse), next_cursor: z.string().nullable() })
  .meta({ id: 'EventPage' });
export type EventPage = z.infer<typeof EventPage>;

export const EventParams = z.object({ event_id: idParam });

export const EventListQuery = z.object({
  type: resourceKey.optional(),
  status: EventStatus.optional(),
  external_id: externalId.optional(),
  broadcast_id: z.string().refine(isUuid, 'must be a UUID').optional(),
  ...cursorPage,
});
export type EventListQuery = z.infer<typeof EventListQuery>;

export const CancelRequest = z.object({ cancellation_key: z.string().min(1).max(128) }).meta({ id: 'CancelRequest' });
export const CancelResponse = z.object({ canceled: z.number().int() }).meta({ id: 'CancelResponse' });
export type CancelResponse = z.infer<typeof CancelResponse>;

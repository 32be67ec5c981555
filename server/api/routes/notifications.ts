// Triggering notifications (service key), an event's delivery status and the activity log (service key
// or a console admin: reads only).
import { defineRoute, reply } from '../route.ts';
import { metricsOf } from '../../base/metrics/registry.ts';
import { idempotencyKeyOf } from '../../delivery/trigger/idempotency.ts';
import {
  cancelNotification,
  cancelNotifications,
  getEvent,
  listEvents,
  triggerNotifications,
  triggerRateChecks,
} from '../../delivery/trigger/notifications.ts';
import {
  CancelRequest,
  CancelResponse,
  EventListQuery,
  EventPage,
  EventParams,
  EventResponse,
  TriggerRequest,
  TriggerResponse,
} from '../../schemas/notifications.ts';

export const triggerNotification = defineRoute({
  method: 'POST',
  path: '/v1/notifications',
  summary: 'Trigger a notification for 1 to 100 recipients (one event each)',
  tag: 'notifications',
  auth: 'service',
  body: TriggerRequest,
  headers: [
    {
      name: 'Idempotency-Key',
      description: 'Up to 255 characters, kept 24 h: a retry with the same key and body replays the first answer',
    },
  ],
  responses: { 202: TriggerResponse },
  errors: [409],
  rateLimit: ({ runtime, em, auth }) => triggerRateChecks(em, auth!.tenantId, runtime.clock.now()),
  audit: { exempt: 'the data plane: the activity log records every trigger' },
  handler: async ({ runtime, em, auth, body, event }) => {
    const key = idempotencyKeyOf(event.req.headers.get('idempotency-key'));
    const result = await triggerNotifications(runtime, em, auth!.tenantId, body, key);
    if (result.status === 202) metricsOf(runtime).observeTrigger(result.body.events.length);
    return reply(result.status, result.body);
  },
});

export const getNotificationEvent = defineRoute({
  method: 'GET',
  path: '/v1/notifications/:event_id',
  summary: "One event's delivery status (secret variables masked)",
  tag: 'notifications',
  auth: 'service',
  params: EventParams,
  responses: { 200: EventResponse },
  errors: [404],
  handler: ({ em, auth, params }) => getEvent(em, auth!.tenantId, params.event_id),
});

export const listNotificationEvents = defineRoute({
  method: 'GET',
  path: '/v1/notifications',
  summary: 'The activity log: events newest first, filtered by type, status or external id',
  tag: 'notifications',
  auth: 'management',
  query: EventListQuery,
  responses: { 200: EventPage },
  handler: ({ em, auth, query }) => listEvents(em, auth!.tenantId, query),
});

export const cancelByKey = defineRoute({
  method: 'POST',
  path: '/v1/notifications/cancel',
  summary: 'Cancel every event with this cancellation key that is not final yet',
  tag: 'notifications',
  auth: 'service',
  body: CancelRequest,
  responses: { 200: CancelResponse },
  audit: { action: 'event.cancel_by_key', target: 'event', id: () => null },
  handler: ({ em, auth, body }) => cancelNotifications(em, auth!.tenantId, body.cancellation_key),
});

export const cancelEvent = defineRoute({
  method: 'DELETE',
  path: '/v1/notifications/:event_id',
  summary: 'Cancel one event: steps not run yet never run (409 when it is final already)',
  tag: 'notifications',
  auth: 'service',
  params: EventParams,
  responses: { 204: null },
  errors: [404, 409],
  audit: { action: 'event.cancel', target: 'event' },
  handler: async ({ em, auth, params }) => {
    await cancelNotification(em, auth!.tenantId, params.event_id);
  },
});

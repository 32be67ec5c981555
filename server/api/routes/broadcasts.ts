// /v1/broadcasts (management): send a notification type to a topic or to every contact, follow it
// with live counts, list, cancel.
import { defineRoute, reply } from '../route.ts';
import {
  BroadcastAccepted,
  BroadcastListQuery,
  BroadcastPage,
  BroadcastParams,
  BroadcastRequest,
  BroadcastResponse,
} from '../../schemas/broadcasts.ts';
import { cancelBroadcast, createBroadcast, getBroadcast, listBroadcasts } from '../../delivery/trigger/broadcasts.ts';
import { idempotencyKeyOf } from '../../delivery/trigger/idempotency.ts';
import { triggerRateChecks } from '../../delivery/trigger/notifications.ts';

const tag = 'broadcasts';

export const create = defineRoute({
  method: 'POST',
  path: '/v1/broadcasts',
  summary:
    'Send a notification type to a topic or to all contacts: 202 at once, then a fan-out writes one event per contact',
  tag,
  auth: 'management',
  body: BroadcastRequest,
  headers: [
    {
      name: 'Idempotency-Key',
      description: 'Up to 255 characters, kept 24 h: a retry with the same key and body replays the first answer',
    },
  ],
  responses: { 202: BroadcastAccepted },
  errors: [409],
  // One broadcast costs one trigger of the tenant's budget.
  rateLimit: ({ runtime, em, auth }) => triggerRateChecks(em, auth!.tenantId, runtime.clock.now()),
  handler: async ({ runtime, em, auth, body, event }) => {
    const result = await createBroadcast(
      runtime,
      em,
      auth!.tenantId,
      body,
      idempotencyKeyOf(event.req.headers.get('idempotency-key')),
    );
    return reply(result.status, result.body);
  },
});

export const list = defineRoute({
  method: 'GET',
  path: '/v1/broadcasts',
  summary: 'Broadcasts, newest first, with their counts',
  tag,
  auth: 'management',
  query: BroadcastListQuery,
  responses: { 200: BroadcastPage },
  handler: ({ em, auth, query }) => listBroadcasts(em, auth!.tenantId, query),
});

export const get = defineRoute({
  method: 'GET',
  path: '/v1/broadcasts/:broadcast_id',
  summary: 'A broadcast with live counts of its events by status',
  tag,
  auth: 'management',
  params: BroadcastParams,
  responses: { 200: BroadcastResponse },
  errors: [404],
  handler: ({ runtime, em, auth, params }) => getBroadcast(runtime, em, auth!.tenantId, params.broadcast_id),
});

export const cancel = defineRoute({
  method: 'POST',
  path: '/v1/broadcasts/:broadcast_id/cancel',
  summary: 'Stop the fan-out and cancel the events not yet delivered (409 when completed)',
  tag,
  auth: 'management',
  params: BroadcastParams,
  responses: { 200: BroadcastResponse },
  errors: [404, 409],
  handler: ({ runtime, em, auth, params }) => cancelBroadcast(runtime, em, auth!.tenantId, params.broadcast_id),
});

// /v1/webhooks: the tenant's outbound webhook endpoints, their test ping, and their deliveries (the
// attempts log) with a manual retry.
import { defineRoute, reply } from '../route.ts';
import {
  CreateWebhookRequest,
  UpdateWebhookRequest,
  WebhookDeliveryListQuery,
  WebhookDeliveryListResponse,
  WebhookDeliveryParams,
  WebhookDeliveryResponse,
  WebhookIdParams,
  WebhookListQuery,
  WebhookListResponse,
  WebhookResponse,
  WebhookWithSecretResponse,
} from '../../schemas/webhooks.ts';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhookDeliveries,
  listWebhooks,
  retryWebhookDelivery,
  rotateWebhookSecret,
  testWebhook,
  updateWebhook,
} from '../../webhooks/endpoints.ts';

const tag = 'webhooks';

export const create = defineRoute({
  method: 'POST',
  path: '/v1/webhooks',
  summary: 'Registers an endpoint; the answer carries its signing secret, shown this once',
  tag,
  auth: 'management',
  body: CreateWebhookRequest,
  responses: { 201: WebhookWithSecretResponse },
  handler: async ({ runtime, em, auth, body }) => reply(201, await createWebhook(runtime, em, auth!.tenantId, body)),
});

export const list = defineRoute({
  method: 'GET',
  path: '/v1/webhooks',
  summary: "The tenant's webhook endpoints",
  tag,
  auth: 'management',
  query: WebhookListQuery,
  responses: { 200: WebhookListResponse },
  handler: ({ em, auth, query }) => listWebhooks(em, auth!.tenantId, query),
});

export const get = defineRoute({
  method: 'GET',
  path: '/v1/webhooks/:id',
  summary: 'One webhook endpoint',
  tag,
  auth: 'management',
  params: WebhookIdParams,
  responses: { 200: WebhookResponse },
  errors: [404],
  handler: ({ em, auth, params }) => getWebhook(em, auth!.tenantId, params.id),
});

export const update = defineRoute({
  method: 'PATCH',
  path: '/v1/webhooks/:id',
  summary: "Changes an endpoint's URL, event types, description, or re-enables it",
  tag,
  auth: 'management',
  params: WebhookIdParams,
  body: UpdateWebhookRequest,
  responses: { 200: WebhookResponse },
  errors: [404],
  handler: ({ runtime, em, auth, params, body }) => updateWebhook(runtime, em, auth!.tenantId, params.id, body),
});

export const remove = defineRoute({
  method: 'DELETE',
  path: '/v1/webhooks/:id',
  summary: 'Removes an endpoint and its deliveries',
  tag,
  auth: 'management',
  params: WebhookIdParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    await deleteWebhook(em, auth!.tenantId, params.id);
    return reply(204);
  },
});

export const rotateSecret = defineRoute({
  method: 'POST',
  path: '/v1/webhooks/:id/rotate-secret',
  summary: 'Replaces the signing secret; the answer carries the new one, shown this once',
  tag,
  auth: 'management',
  params: WebhookIdParams,
  responses: { 200: WebhookWithSecretResponse },
  errors: [404],
  handler: ({ runtime, em, auth, params }) => rotateWebhookSecret(runtime, em, auth!.tenantId, params.id),
});

export const test = defineRoute({
  method: 'POST',
  path: '/v1/webhooks/:id/test',
  summary: 'Sends a webhook.test event to the endpoint; answers its delivery',
  tag,
  auth: 'management',
  params: WebhookIdParams,
  responses: { 202: WebhookDeliveryResponse },
  errors: [404],
  handler: async ({ em, auth, params }) => reply(202, await testWebhook(em, auth!.tenantId, params.id)),
});

export const deliveries = defineRoute({
  method: 'GET',
  path: '/v1/webhooks/:id/deliveries',
  summary: "The endpoint's deliveries, newest first: status, attempts, the last answer",
  tag,
  auth: 'management',
  params: WebhookIdParams,
  query: WebhookDeliveryListQuery,
  responses: { 200: WebhookDeliveryListResponse },
  errors: [404],
  handler: ({ em, auth, params, query }) => listWebhookDeliveries(em, auth!.tenantId, params.id, query),
});

export const retry = defineRoute({
  method: 'POST',
  path: '/v1/webhooks/:id/deliveries/:delivery_id/retry',
  summary: 'Makes a delivery due now (one more attempt)',
  tag,
  auth: 'management',
  params: WebhookDeliveryParams,
  responses: { 202: WebhookDeliveryResponse },
  errors: [404],
  audit: { action: 'webhook_delivery.retry', target: 'webhook_delivery' },
  handler: async ({ em, auth, params }) =>
    reply(202, await retryWebhookDelivery(em, auth!.tenantId, params.id, params.delivery_id)),
});

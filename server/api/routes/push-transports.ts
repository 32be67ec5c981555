// The tenant's push transports (one per provider): list, replace, remove, test send.
import { defineRoute, reply } from '../route.ts';
import {
  PushProviderParams,
  PushTransportRequest,
  PushTransportResponse,
  SendTestPushRequest,
  SendTestPushResponse,
} from '../../schemas/transports.ts';
import {
  deletePushTransport,
  listPushTransports,
  putPushTransport,
  testPushTransport,
} from '../../channels/push/push-transports.ts';
import { z } from 'zod';

const tag = 'transports';

export const listPushTransportsRoute = defineRoute({
  method: 'GET',
  path: '/v1/push-transport',
  summary: "The tenant's push transports; empty means no push can be sent",
  tag,
  auth: 'management',
  responses: { 200: z.array(PushTransportResponse) },
  handler: ({ runtime, em, auth }) => listPushTransports(runtime, em, auth!.tenantId),
});

export const putPushTransportRoute = defineRoute({
  method: 'PUT',
  path: '/v1/push-transport/:provider',
  summary: "Creates or replaces one provider's transport (secret fields are write-only)",
  tag,
  auth: 'management',
  params: PushProviderParams,
  body: PushTransportRequest,
  responses: { 200: PushTransportResponse },
  errors: [422],
  handler: ({ runtime, em, auth, params, body }) =>
    putPushTransport(runtime, em, auth!.tenantId, params.provider, body),
});

export const deletePushTransportRoute = defineRoute({
  method: 'DELETE',
  path: '/v1/push-transport/:provider',
  summary: "Removes one provider's transport",
  tag,
  auth: 'management',
  params: PushProviderParams,
  responses: { 204: null },
  errors: [422],
  handler: async ({ em, auth, params }) => {
    await deletePushTransport(em, auth!.tenantId, params.provider);
    return reply(204);
  },
});

export const testPushTransportRoute = defineRoute({
  method: 'POST',
  path: '/v1/push-transport/:provider/test',
  summary: "Sends a test notification to a token or browser subscription and reports the provider's answer",
  tag,
  auth: 'management',
  params: PushProviderParams,
  body: SendTestPushRequest,
  responses: { 200: SendTestPushResponse },
  errors: [422],
  audit: { exempt: 'a test send: changes nothing' },
  handler: ({ runtime, em, auth, params, body }) =>
    testPushTransport(runtime, em, auth!.tenantId, params.provider, body),
});

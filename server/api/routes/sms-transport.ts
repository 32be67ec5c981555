// The tenant's SMS transports (one per provider, asked in priority order with failover): list,
// replace, remove, test send.
import { z } from 'zod';
import { defineRoute, reply } from '../route.ts';
import {
  SendTestSmsRequest,
  SendTestSmsResponse,
  SmsProviderParams,
  SmsTransportRequest,
  SmsTransportResponse,
} from '../../schemas/sms.ts';
import { deleteSmsTransport, listSmsTransports, putSmsTransport } from '../../channels/sms/sms-transports.ts';
import { testSmsTransport } from '../../channels/sms/test-send.ts';

const tag = 'transports';

export const listSmsTransportsRoute = defineRoute({
  method: 'GET',
  path: '/v1/sms-transport',
  summary:
    "The tenant's SMS transports in the order deliveries ask them (priority, lower first); empty: no SMS is sent",
  tag,
  auth: 'management',
  responses: { 200: z.array(SmsTransportResponse) },
  handler: ({ runtime, em, auth }) => listSmsTransports(runtime, em, auth!.tenantId),
});

export const putSmsTransportRoute = defineRoute({
  method: 'PUT',
  path: '/v1/sms-transport/:provider',
  summary: "Creates or replaces one provider's SMS transport (secret fields are write-only)",
  tag,
  auth: 'management',
  params: SmsProviderParams,
  body: SmsTransportRequest,
  responses: { 200: SmsTransportResponse },
  errors: [422],
  audit: {
    // The entry, not the request: no secret, no callback token.
    changes: (_ctx, result) => {
      const entry = result as SmsTransportResponse;
      return { priority: entry.priority, enabled: entry.enabled, settings: entry.settings };
    },
  },
  handler: ({ runtime, em, auth, params, body }) => putSmsTransport(runtime, em, auth!.tenantId, params.provider, body),
});

export const deleteSmsTransportRoute = defineRoute({
  method: 'DELETE',
  path: '/v1/sms-transport/:provider',
  summary: "Removes one provider's SMS transport",
  tag,
  auth: 'management',
  params: SmsProviderParams,
  responses: { 204: null },
  errors: [404, 422],
  handler: async ({ em, auth, params }) => {
    await deleteSmsTransport(em, auth!.tenantId, params.provider);
    return reply(204);
  },
});

export const testSmsTransportRoute = defineRoute({
  method: 'POST',
  path: '/v1/sms-transport/:provider/test',
  summary: "Sends a test SMS through one provider (enabled or not, no failover) and reports the provider's answer",
  tag,
  auth: 'management',
  params: SmsProviderParams,
  body: SendTestSmsRequest,
  responses: { 200: SendTestSmsResponse },
  errors: [404, 422],
  audit: { exempt: 'a test send: changes nothing' },
  handler: ({ runtime, em, auth, params, body }) =>
    testSmsTransport(runtime, em, auth!.tenantId, params.provider, body),
});

// The tenant's chat transports (the Slack and Telegram bot tokens): list, replace, remove, test send.
import { z } from 'zod';
import { defineRoute, reply } from '../route.ts';
import {
  ChatTransportParams,
  ChatTransportRequest,
  ChatTransportResponse,
  TestChatTransportRequest,
  TestChatTransportResponse,
} from '../../schemas/chat.ts';
import {
  deleteChatTransport,
  listChatTransports,
  putChatTransport,
  testChatTransport,
} from '../../channels/chat/transports.ts';

const tag = 'transports';

export const listChatTransportsRoute = defineRoute({
  method: 'GET',
  path: '/v1/chat-transport',
  summary: "The tenant's chat bot transports, in priority order; webhook URL destinations need none",
  tag,
  auth: 'management',
  responses: { 200: z.array(ChatTransportResponse) },
  handler: ({ runtime, em, auth }) => listChatTransports(runtime, em, auth!.tenantId),
});

export const putChatTransportRoute = defineRoute({
  method: 'PUT',
  path: '/v1/chat-transport/:provider',
  summary: "Creates or replaces one provider's bot transport (the bot token is write-only)",
  tag,
  auth: 'management',
  params: ChatTransportParams,
  body: ChatTransportRequest,
  responses: { 200: ChatTransportResponse },
  errors: [422],
  handler: ({ runtime, em, auth, params, body }) =>
    putChatTransport(runtime, em, auth!.tenantId, params.provider, body),
});

export const deleteChatTransportRoute = defineRoute({
  method: 'DELETE',
  path: '/v1/chat-transport/:provider',
  summary: "Removes one provider's bot transport",
  tag,
  auth: 'management',
  params: ChatTransportParams,
  responses: { 204: null },
  errors: [422],
  handler: async ({ em, auth, params }) => {
    await deleteChatTransport(em, auth!.tenantId, params.provider);
    return reply(204);
  },
});

export const testChatTransportRoute = defineRoute({
  method: 'POST',
  path: '/v1/chat-transport/:provider/test',
  summary: "Sends a test message with the bot to a channel or chat id and reports the provider's answer",
  tag,
  auth: 'management',
  params: ChatTransportParams,
  body: TestChatTransportRequest,
  responses: { 200: TestChatTransportResponse },
  errors: [422],
  audit: { exempt: 'a test send: changes nothing' },
  handler: ({ runtime, em, auth, params, body }) =>
    testChatTransport(runtime, em, auth!.tenantId, params.provider, body),
});

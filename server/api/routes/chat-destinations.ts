// /v1/contacts/{id}/chat-destinations: a contact's chat destinations (management credentials only: a
// webhook URL is a credential of the team it posts to, not the contact's to manage).
import { z } from 'zod';
import { defineRoute, reply } from '../route.ts';
import { ContactIdParams } from '../../schemas/contacts.ts';
import { ChatDestinationParams, ChatDestinationResponse, CreateChatDestinationRequest } from '../../schemas/chat.ts';
import { contactInScope } from '../../resources/contacts.ts';
import {
  createChatDestination,
  deleteChatDestination,
  listChatDestinations,
} from '../../channels/chat/destinations.ts';

const TAG = 'chat-destinations';

export const create = defineRoute({
  method: 'POST',
  path: '/v1/contacts/:id/chat-destinations',
  summary: 'Add a chat destination (a webhook URL, a Slack channel or a Telegram chat) to a contact',
  tag: TAG,
  auth: 'management',
  params: ContactIdParams,
  body: CreateChatDestinationRequest,
  responses: { 201: ChatDestinationResponse },
  errors: [404],
  // The webhook URL is a credential: the entry records what the response shows of it.
  audit: { changes: (_ctx, result) => result },
  handler: async ({ runtime, em, auth, params, body }) => {
    const contact = await contactInScope(em, auth!, params.id);
    return reply(201, await createChatDestination(runtime, em, contact.tenant_id, contact.id, body));
  },
});

export const list = defineRoute({
  method: 'GET',
  path: '/v1/contacts/:id/chat-destinations',
  summary: "The contact's chat destinations, oldest first (webhook URLs as hints)",
  tag: TAG,
  auth: 'management',
  params: ContactIdParams,
  responses: { 200: z.array(ChatDestinationResponse) },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    const contact = await contactInScope(em, auth!, params.id);
    return listChatDestinations(em, contact.tenant_id, contact.id);
  },
});

export const remove = defineRoute({
  method: 'DELETE',
  path: '/v1/contacts/:id/chat-destinations/:destination_id',
  summary: 'Remove a chat destination',
  tag: TAG,
  auth: 'management',
  params: ChatDestinationParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    const contact = await contactInScope(em, auth!, params.id);
    await deleteChatDestination(em, contact.tenant_id, contact.id, params.destination_id);
    return reply(204);
  },
});

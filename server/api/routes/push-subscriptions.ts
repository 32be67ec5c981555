// /v1/contacts/{id}/push-subscriptions: device tokens and browser subscriptions of a contact
// (a tenant credential or the contact's own token).
import { z } from 'zod';
import { defineRoute, reply } from '../route.ts';
import { ContactIdParams } from '../../schemas/contacts.ts';
import {
  CreatePushSubscriptionRequest,
  PushSubscriptionParams,
  PushSubscriptionResponse,
} from '../../schemas/push-subscriptions.ts';
import { contactInScope } from '../../resources/contacts.ts';
import {
  deletePushSubscription,
  listPushSubscriptions,
  registerPushSubscription,
} from '../../channels/push/push-subscriptions.ts';

const TAG = 'push-subscriptions';

export const create = defineRoute({
  method: 'POST',
  path: '/v1/contacts/:id/push-subscriptions',
  summary:
    'Register a push destination (201; 200 when this contact already has it; moved from another contact of the tenant)',
  tag: TAG,
  auth: 'either',
  params: ContactIdParams,
  body: CreatePushSubscriptionRequest,
  responses: { 201: PushSubscriptionResponse, 200: PushSubscriptionResponse },
  errors: [404],
  handler: async ({ runtime, em, auth, params, body }) => {
    const contact = await contactInScope(em, auth!, params.id);
    const { subscription, created } = await registerPushSubscription(
      em,
      contact.tenant_id,
      contact.id,
      body,
      runtime.config.allowPrivatePushEndpoints,
    );
    return reply(created ? 201 : 200, subscription);
  },
});

export const list = defineRoute({
  method: 'GET',
  path: '/v1/contacts/:id/push-subscriptions',
  summary: "The contact's push destinations",
  tag: TAG,
  auth: 'either',
  params: ContactIdParams,
  responses: { 200: z.array(PushSubscriptionResponse) },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    const contact = await contactInScope(em, auth!, params.id);
    return listPushSubscriptions(em, contact.id);
  },
});

export const remove = defineRoute({
  method: 'DELETE',
  path: '/v1/contacts/:id/push-subscriptions/:subscription_id',
  summary: 'Remove a push destination',
  tag: TAG,
  auth: 'either',
  params: PushSubscriptionParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    const contact = await contactInScope(em, auth!, params.id);
    await deletePushSubscription(em, contact.id, params.subscription_id);
    return reply(204);
  },
});

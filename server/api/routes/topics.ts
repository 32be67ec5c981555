// /v1/topics (management): topics, their subscribers, and a contact's topics.
import { z } from 'zod';
import { defineRoute, reply } from '../route.ts';
import { ContactIdParams } from '../../schemas/contacts.ts';
import {
  ContactTopic,
  CreateTopicRequest,
  TopicParams,
  TopicResponse,
  TopicSubscriberPage,
  TopicSubscribersAdded,
  TopicSubscribersQuery,
  TopicSubscribersRemoved,
  TopicSubscribersRequest,
} from '../../schemas/topics.ts';
import { getContact } from '../../resources/contacts.ts';
import {
  createTopic,
  deleteTopic,
  getTopic,
  listContactTopics,
  listTopicSubscribers,
  listTopics,
  subscribeToTopic,
  unsubscribeFromTopic,
} from '../../resources/topics.ts';

const tag = 'topics';

export const create = defineRoute({
  method: 'POST',
  path: '/v1/topics',
  summary: 'Create a topic (409 when the key exists)',
  tag,
  auth: 'management',
  body: CreateTopicRequest,
  responses: { 201: TopicResponse },
  errors: [409],
  handler: ({ em, auth, body }) => createTopic(em, auth!.tenantId, body),
});

export const list = defineRoute({
  method: 'GET',
  path: '/v1/topics',
  summary: 'List topics with their subscriber counts, by key',
  tag,
  auth: 'management',
  responses: { 200: z.array(TopicResponse) },
  handler: ({ em, auth }) => listTopics(em, auth!.tenantId),
});

export const get = defineRoute({
  method: 'GET',
  path: '/v1/topics/:key',
  summary: 'Get a topic with its subscriber count',
  tag,
  auth: 'management',
  params: TopicParams,
  responses: { 200: TopicResponse },
  errors: [404],
  handler: ({ em, auth, params }) => getTopic(em, auth!.tenantId, params.key),
});

export const remove = defineRoute({
  method: 'DELETE',
  path: '/v1/topics/:key',
  summary: 'Delete a topic and its subscriptions (its contacts stay)',
  tag,
  auth: 'management',
  params: TopicParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    await deleteTopic(em, auth!.tenantId, params.key);
    return reply(204);
  },
});

export const subscribe = defineRoute({
  method: 'POST',
  path: '/v1/topics/:key/subscribers',
  summary: 'Subscribe up to 1,000 contacts by external id (unknown ones are created bare)',
  tag,
  auth: 'management',
  audit: { action: 'topic.subscribers.add', target: 'topic', id: (ctx) => (ctx.params as { key: string }).key },
  params: TopicParams,
  body: TopicSubscribersRequest,
  responses: { 200: TopicSubscribersAdded },
  errors: [404],
  handler: ({ em, auth, params, body }) => subscribeToTopic(em, auth!.tenantId, params.key, body.external_ids),
});

export const unsubscribe = defineRoute({
  method: 'DELETE',
  path: '/v1/topics/:key/subscribers',
  summary: 'Unsubscribe up to 1,000 contacts by external id',
  tag,
  auth: 'management',
  params: TopicParams,
  body: TopicSubscribersRequest,
  responses: { 200: TopicSubscribersRemoved },
  errors: [404],
  handler: ({ em, auth, params, body }) => unsubscribeFromTopic(em, auth!.tenantId, params.key, body.external_ids),
});

export const subscribers = defineRoute({
  method: 'GET',
  path: '/v1/topics/:key/subscribers',
  summary: "A topic's subscribers in pages (pass next_cursor back as cursor)",
  tag,
  auth: 'management',
  params: TopicParams,
  query: TopicSubscribersQuery,
  responses: { 200: TopicSubscriberPage },
  errors: [404],
  handler: ({ em, auth, params, query }) => listTopicSubscribers(em, auth!.tenantId, params.key, query),
});

export const contactTopics = defineRoute({
  method: 'GET',
  path: '/v1/contacts/:id/topics',
  summary: 'The topics a contact is subscribed to',
  tag,
  auth: 'management',
  params: ContactIdParams,
  responses: { 200: z.array(ContactTopic) },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    const contact = await getContact(em, auth!.tenantId, params.id);
    return listContactTopics(em, auth!.tenantId, contact.id);
  },
});

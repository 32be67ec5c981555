// Topics: named lists of a tenant's contacts, the audiences of broadcasts.
import { z } from 'zod';
import { cursorPage, isoDateTime, resourceKey } from './common.ts';
import { externalId } from './common.ts';

export const TopicParams = z.object({ key: resourceKey });

export const CreateTopicRequest = z
  .object({ key: resourceKey, name: z.string().trim().min(1).max(200) })
  .meta({ id: 'CreateTopicRequest' });
export type CreateTopicRequest = z.infer<typeof CreateTopicRequest>;

export const TopicResponse = z
  .object({
    key: z.string(),
    name: z.string(),
    subscriber_count: z.number().int(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'TopicResponse' });
export type TopicResponse = z.infer<typeof TopicResponse>;

/** Up to 1,000 external ids; unknown ones become bare contacts when subscribing (as a trigger's recipients do). */
export const TopicSubscribersRequest = z
  .object({ external_ids: z.array(externalId).min(1).max(1000) })
  .meta({ id: 'TopicSubscribersRequest' });
export type TopicSubscribersRequest = z.infer<typeof TopicSubscribersRequest>;

export const TopicSubscribersAdded = z.object({ added: z.number().int() }).meta({ id: 'TopicSubscribersAdded' });
export const TopicSubscribersRemoved = z.object({ removed: z.number().int() }).meta({ id: 'TopicSubscribersRemoved' });

export const TopicSubscriber = z
  .object({ contact_id: z.string(), external_id: z.string(), subscribed_at: isoDateTime })
  .meta({ id: 'TopicSubscriber' });
export type TopicSubscriber = z.infer<typeof TopicSubscriber>;

export const TopicSubscriberPage = z
  .object({ items: z.array(TopicSubscriber), next_cursor: z.string().nullable() })
  .meta({ id: 'TopicSubscriberPage' });
export type TopicSubscriberPage = z.infer<typeof TopicSubscriberPage>;

export const TopicSubscribersQuery = z.object({ ...cursorPage });
export type TopicSubscribersQuery = z.infer<typeof TopicSubscribersQuery>;

export const ContactTopic = z
  .object({ key: z.string(), name: z.string(), subscribed_at: isoDateTime })
  .meta({ id: 'ContactTopic' });
export type ContactTopic = z.infer<typeof ContactTopic>;

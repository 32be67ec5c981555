// Topics: named lists of a tenant's contacts, addressed by key. Subscribing names contacts by external
// id and creates the unknown ones bare, as a trigger's recipients are (contact-upsert.ts, in external_id
// order, so it cannot deadlock with triggers). Subscriptions go with their topic or their contact.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { execute, query, queryOne, toIsoTimestamp } from '../base/db/sql.ts';
import { upsertContacts } from './contact-upsert.ts';
import { decodeCursor, encodeCursor } from '../base/cursor.ts';
import type {
  ContactTopic,
  CreateTopicRequest,
  TopicResponse,
  TopicSubscriberPage,
  TopicSubscribersQuery,
} from '../schemas/topics.ts';

interface TopicRow {
  id: string;
  key: string;
  name: string;
  subscriber_count: number;
  created_at: Date | string;
  updated_at: Date | string;
}

const COUNTED = `t.id, t.key, t.name, t.created_at, t.updated_at,
  (SELECT count(*)::int FROM topic_subscriptions s WHERE s.topic_id = t.id) AS subscriber_count`;

const INSERT_TOPIC = `INSERT INTO topics (id, tenant_id, key, name) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, key) DO NOTHING
     RETURNING id, key, name, created_at, updated_at, 0 AS subscriber_count`;
const LIST_TOPICS = `SELECT ${COUNTED} FROM topics t WHERE t.tenant_id = $1 ORDER BY t.key`;
const GET_TOPIC = `SELECT ${COUNTED} FROM topics t WHERE t.tenant_id = $1 AND t.key = $2`;
const SELECT_TOPIC_ID = `SELECT id FROM topics WHERE tenant_id = $1 AND key = $2`;
const RENAME_TOPIC = `UPDATE topics SET name = $3, updated_at = now() WHERE tenant_id = $1 AND key = $2`;
const DELETE_TOPIC = `DELETE FROM topics WHERE tenant_id = $1 AND key = $2`;
const SUBSCRIBE_CONTACTS = `INSERT INTO topic_subscriptions (topic_id, contact_id, tenant_id)
       SELECT $1, c, $2 FROM unnest($3::uuid[]) AS c ORDER BY c
       ON CONFLICT (topic_id, contact_id) DO NOTHING`;
const UNSUBSCRIBE_EXTERNAL_IDS = `DELETE FROM topic_subscriptions s USING contacts c
      WHERE s.topic_id = $1 AND s.contact_id = c.id AND c.tenant_id = $2 AND c.external_id = ANY($3::text[])`;
const LIST_TOPIC_SUBSCRIBERS = `SELECT s.contact_id, c.external_id, s.created_at AS subscribed_at
       FROM topic_subscriptions s JOIN contacts c ON c.id = s.contact_id
      WHERE s.topic_id = $1 AND ($2::uuid IS NULL OR s.contact_id > $2::uuid)
      ORDER BY s.contact_id
      LIMIT $3`;
const LIST_CONTACT_TOPICS = `SELECT t.key, t.name, s.created_at AS subscribed_at
       FROM topic_subscriptions s JOIN topics t ON t.id = s.topic_id
      WHERE s.contact_id = $1 AND t.tenant_id = $2
      ORDER BY t.key`;

export function toTopicResponse(row: TopicRow): TopicResponse {
  return {
    key: row.key,
    name: row.name,
    subscriber_count: row.subscriber_count,
    created_at: toIsoTimestamp(row.created_at),
    updated_at: toIsoTimestamp(row.updated_at),
  };
}

/** 409 when the key is taken. */
export async function createTopic(
  em: EntityManager,
  tenantId: string,
  input: CreateTopicRequest,
): Promise<TopicResponse> {
  const row = await queryOne<TopicRow>(em, INSERT_TOPIC, [newId(), tenantId, input.key, input.name]);
  if (!row) throw new AppError('already_exists', `A topic with key ${input.key} already exists`);
  return toTopicResponse(row);
}

export async function listTopics(em: EntityManager, tenantId: string): Promise<TopicResponse[]> {
  const rows = await query<TopicRow>(em, LIST_TOPICS, [tenantId]);
  return rows.map(toTopicResponse);
}

export async function getTopic(em: EntityManager, tenantId: string, key: string): Promise<TopicResponse> {
  const row = await queryOne<TopicRow>(em, GET_TOPIC, [tenantId, key]);
  if (!row) throw notFound('Topic');
  return toTopicResponse(row);
}

/** The topic's id; 404 when the tenant has no such topic. */
export async function topicId(em: EntityManager, tenantId: string, key: string): Promise<string> {
  const row = await queryOne<{ id: string }>(em, SELECT_TOPIC_ID, [tenantId, key]);
  if (!row) throw notFound('Topic');
  return row.id;
}

/** Renames a topic (its key is its identity); 404 when the tenant has no such topic. */
export async function renameTopic(em: EntityManager, tenantId: string, key: string, name: string): Promise<void> {
  const changed = await execute(em, RENAME_TOPIC, [tenantId, key, name]);
  if (changed === 0) throw notFound('Topic');
}

/** Deletes the topic and its subscriptions; a broadcast to it that is still fanning out stops where it is. */
export async function deleteTopic(em: EntityManager, tenantId: string, key: string): Promise<void> {
  const deleted = await execute(em, DELETE_TOPIC, [tenantId, key]);
  if (deleted === 0) throw notFound('Topic');
}

/** Subscribes contacts by external id (unknown ones are created bare); answers how many were not subscribed yet. */
export async function subscribeToTopic(
  em: EntityManager,
  tenantId: string,
  key: string,
  externalIds: string[],
): Promise<{ added: number }> {
  return em.transactional(async (tx) => {
    const id = await topicId(tx, tenantId, key);
    const contacts = await upsertContacts(
      tx,
      tenantId,
      externalIds.map((external_id) => ({ external_id })),
    );
    const added = await execute(tx, SUBSCRIBE_CONTACTS, [id, tenantId, contacts.map((c) => c.id)]);
    return { added };
  });
}

/** Unsubscribes contacts by external id; unknown ones and non-subscribers are ignored. */
export async function unsubscribeFromTopic(
  em: EntityManager,
  tenantId: string,
  key: string,
  externalIds: string[],
): Promise<{ removed: number }> {
  const id = await topicId(em, tenantId, key);
  const removed = await execute(em, UNSUBSCRIBE_EXTERNAL_IDS, [id, tenantId, externalIds]);
  return { removed };
}

/** The topic's subscribers in contact id order, paged by an opaque cursor. */
export async function listTopicSubscribers(
  em: EntityManager,
  tenantId: string,
  key: string,
  page: TopicSubscribersQuery,
): Promise<TopicSubscriberPage> {
  const id = await topicId(em, tenantId, key);
  const after = page.cursor ? decodeCursor(page.cursor) : null;
  const rows = await query<{ contact_id: string; external_id: string; subscribed_at: Date | string }>(
    em,
    LIST_TOPIC_SUBSCRIBERS,
    [id, after, page.limit + 1],
  );
  const items = rows.slice(0, page.limit).map((r) => ({
    contact_id: r.contact_id,
    external_id: r.external_id,
    subscribed_at: toIsoTimestamp(r.subscribed_at),
  }));
  return { items, next_cursor: rows.length > page.limit ? encodeCursor(items[items.length - 1]!.contact_id) : null };
}

/** The topics a contact is subscribed to, by key. */
export async function listContactTopics(
  em: EntityManager,
  tenantId: string,
  contactId: string,
): Promise<ContactTopic[]> {
  const rows = await query<{ key: string; name: string; subscribed_at: Date | string }>(em, LIST_CONTACT_TOPICS, [
    contactId,
    tenantId,
  ]);
  return rows.map((r) => ({ key: r.key, name: r.name, subscribed_at: toIsoTimestamp(r.subscribed_at) }));
}

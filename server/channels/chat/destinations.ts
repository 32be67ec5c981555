// A contact's chat destinations: a person or a team channel on one chat provider. A webhook URL is a
// credential (whoever holds it can post there): it is encrypted with the key ring, bound to the tenant
// and the destination's id, and only a hint of it (origin and last characters) is ever shown. It must
// reach a public address at write, unless allowPrivateWebhookUrls; the send checks again as it
// connects. Which fields a provider takes: slack a webhook URL or a channel (the tenant's bot posts),
// telegram a chat id (the tenant's bot sends), the others a webhook URL.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context } from '../../base/context.ts';
import { chatWebhookUrlAad } from '../../base/crypto/aad.ts';
import { isUnreadable } from '../../base/crypto/keyring.ts';
import { execute, query, queryOne } from '../../base/db/sql.ts';
import { invalidField, notFound } from '../../base/errors.ts';
import { newId } from '../../base/ids.ts';
import { allowsPrivate } from '../../base/net/allow-private.ts';
import { hostRefusal } from '../../base/net/public-address.ts';
import { toIsoTimestamp } from '../../base/timestamps.ts';
import type { ChatDestinationResponse, ChatProvider, CreateChatDestinationRequest } from '../../schemas/chat.ts';

export interface ChatDestinationRow {
  id: string;
  tenant_id: string;
  contact_id: string;
  provider: ChatProvider;
  label: string | null;
  webhook_url_ciphertext: string | null;
  webhook_url_hint: string | null;
  channel: string | null;
  chat_id: string | null;
  created_at: Date;
}

const COLUMNS =
  'id, tenant_id, contact_id, provider, label, webhook_url_ciphertext, webhook_url_hint, channel, chat_id, created_at';
const INSERT_DESTINATION = `INSERT INTO chat_destinations
       (id, tenant_id, contact_id, provider, label, webhook_url_ciphertext, webhook_url_hint, channel, chat_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`;
const LIST_DESTINATIONS = `SELECT ${COLUMNS} FROM chat_destinations
      WHERE tenant_id = $1 AND contact_id = $2 ORDER BY created_at, id`;
const DELETE_DESTINATION = `DELETE FROM chat_destinations WHERE id = $1 AND tenant_id = $2 AND contact_id = $3`;
/** A delivery's destination, checked against its contact (a destination moved or deleted since is gone). */
const CONTACT_DESTINATION = `SELECT ${COLUMNS} FROM chat_destinations WHERE id = $1 AND contact_id = $2`;
/** A batch's destinations at once (the batched remote run's preload). */
const DESTINATIONS_BY_ID = `SELECT ${COLUMNS} FROM chat_destinations WHERE id = ANY($1::uuid[])`;

/** The providers that post through an incoming webhook URL (slack also may, or use a channel). */
const WEBHOOK_PROVIDERS: ReadonlySet<ChatProvider> = new Set([
  'slack',
  'teams',
  'discord',
  'mattermost',
  'google_chat',
]);

export const CHAT_WEBHOOK_URL_REFUSED = `must reach a public address ${allowsPrivate('allowPrivateWebhookUrls')}`;

/** What a webhook URL shows of itself: its origin and last four characters. */
export function webhookUrlHint(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}/.../${url.slice(-4)}`;
}

export function toChatDestinationResponse(row: ChatDestinationRow): ChatDestinationResponse {
  return {
    id: row.id,
    provider: row.provider,
    label: row.label,
    webhook_url_hint: row.webhook_url_hint,
    channel: row.channel,
    chat_id: row.chat_id,
    created_at: toIsoTimestamp(row.created_at),
  };
}

/** The fields the provider takes, or a 422 naming the one that is missing or out of place. */
function checkFields(input: CreateChatDestinationRequest): void {
  const refuse = (field: 'webhook_url' | 'channel' | 'chat_id', why: string) => {
    throw invalidField(['body', field], why);
  };
  const { provider } = input;
  if (provider !== 'slack' && input.channel !== undefined) refuse('channel', 'only slack destinations take a channel');
  if (provider !== 'telegram' && input.chat_id !== undefined)
    refuse('chat_id', 'only telegram destinations take a chat_id');
  if (provider === 'telegram') {
    if (input.webhook_url !== undefined)
      refuse('webhook_url', "telegram destinations take a chat_id (sent to with the tenant's bot), not a webhook URL");
    if (input.chat_id === undefined) refuse('chat_id', 'a telegram destination needs the chat_id');
    return;
  }
  if (provider === 'slack') {
    if (input.webhook_url !== undefined && input.channel !== undefined)
      refuse('channel', 'give a webhook_url or a channel, not both');
    if (input.webhook_url === undefined && input.channel === undefined)
      refuse('webhook_url', "a slack destination needs a webhook_url, or a channel for the tenant's bot");
    return;
  }
  if (WEBHOOK_PROVIDERS.has(provider) && input.webhook_url === undefined)
    refuse('webhook_url', `a ${provider} destination needs its incoming webhook URL`);
}

export async function createChatDestination(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  contactId: string,
  input: CreateChatDestinationRequest,
): Promise<ChatDestinationResponse> {
  checkFields(input);
  const url = input.webhook_url;
  if (url !== undefined && !runtime.config.allowPrivateWebhookUrls) {
    const options = { dnsServers: runtime.config.dnsServers };
    const refusal = await hostRefusal(new URL(url).hostname, options, CHAT_WEBHOOK_URL_REFUSED);
    if (refusal) throw invalidField(['body', 'webhook_url'], refusal);
  }
  const id = newId();
  const row = await queryOne<ChatDestinationRow>(em, INSERT_DESTINATION, [
    id,
    tenantId,
    contactId,
    input.provider,
    input.label || null,
    url === undefined ? null : runtime.keyRing.encrypt(url, chatWebhookUrlAad(tenantId, id)),
    url === undefined ? null : webhookUrlHint(url),
    input.channel ?? null,
    input.chat_id ?? null,
  ]);
  return toChatDestinationResponse(row!);
}

export async function listChatDestinations(
  em: EntityManager,
  tenantId: string,
  contactId: string,
): Promise<ChatDestinationResponse[]> {
  const rows = await query<ChatDestinationRow>(em, LIST_DESTINATIONS, [tenantId, contactId]);
  return rows.map(toChatDestinationResponse);
}

export async function deleteChatDestination(
  em: EntityManager,
  tenantId: string,
  contactId: string,
  destinationId: string,
): Promise<void> {
  if ((await execute(em, DELETE_DESTINATION, [destinationId, tenantId, contactId])) === 0)
    throw notFound('Chat destination');
}

export async function findContactDestination(
  em: EntityManager,
  contactId: string,
  destinationId: string,
): Promise<ChatDestinationRow | null> {
  return (await queryOne<ChatDestinationRow>(em, CONTACT_DESTINATION, [destinationId, contactId])) ?? null;
}

export function findDestinationsById(em: EntityManager, ids: string[]): Promise<ChatDestinationRow[]> {
  return query<ChatDestinationRow>(em, DESTINATIONS_BY_ID, [ids]);
}

/** The destination's webhook URL in clear; null when it has none; 'unreadable' when its key is gone. */
export function webhookUrlOf(runtime: Context, row: ChatDestinationRow): string | null | 'unreadable' {
  if (!row.webhook_url_ciphertext) return null;
  try {
    return runtime.keyRing.decrypt(row.webhook_url_ciphertext, chatWebhookUrlAad(row.tenant_id, row.id));
  } catch (error) {
    if (isUnreadable(error)) return 'unreadable';
    throw error;
  }
}

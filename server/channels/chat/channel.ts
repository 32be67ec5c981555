// The chat channel: one delivery per chat destination of the contact (delivery.destination is its id).
// The message is the chat template (or, without one, the inbox template) rendered as a title, a body in
// the Markdown subset and an action URL, posted in the destination's provider's own format. Each send
// goes through sendWithFailover with the destination as its one candidate, for the trail, the circuit
// and the pause: a 429 with Retry-After pauses only what the provider limits (a webhook URL, a
// Telegram chat, a tenant's Slack bot), so other destinations go on. A webhook the provider reports
// gone fails the delivery without retry; the destination stays for the tenant to replace.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context } from '../../base/context.ts';
import { sendWithFailover } from '../failover.ts';
import { renderMessageDelivery } from '../render-delivery.ts';
import { lookupOnce, type ChannelSender, type RunLookups } from '../types.ts';
import type { ChatTransportProvider } from '../../schemas/chat.ts';
import { findContactDestination, findDestinationsById, webhookUrlOf, type ChatDestinationRow } from './destinations.ts';
import { sendSlackBot, sendTelegram, sendWebhook, type ChatMessage } from './providers.ts';
import { loadChatTransport, type LoadedChatTransport } from './transports.ts';

const destinationKey = (contactId: string, destinationId: string) => `chat-destination:${contactId}:${destinationId}`;

function transportOf(
  runtime: Context,
  em: EntityManager,
  lookups: RunLookups | undefined,
  tenantId: string,
  provider: ChatTransportProvider,
): Promise<LoadedChatTransport | null> {
  return lookupOnce(lookups, `chat-transport:${tenantId}:${provider}`, () =>
    loadChatTransport(runtime, em, tenantId, provider),
  );
}

export const chatChannel: ChannelSender = {
  channel: 'chat',
  async deliver({ runtime, em, delivery, event, contact, renderVariables, templates, lookups }) {
    const destination = await lookupOnce(lookups, destinationKey(contact.id, delivery.destination), () =>
      findContactDestination(em, contact.id, delivery.destination),
    );
    if (!destination) return { status: 'skipped', reason: 'no_destination' };
    const rendered = await renderMessageDelivery(em, 'chat', event, contact, renderVariables, templates);
    if (!rendered) return { status: 'skipped', reason: 'no_template' };
    const message: ChatMessage = rendered;
    const tenantId = event.tenant_id;
    const url = webhookUrlOf(runtime, destination);
    if (url === 'unreadable') return { status: 'skipped', reason: 'credentials_unreadable' };
    if (url !== null && destination.provider !== 'telegram') {
      const provider = destination.provider;
      return sendWithFailover(runtime, [
        {
          provider,
          circuitKey: `${tenantId}:chat:${provider}:${destination.id}`,
          send: () => sendWebhook(runtime, provider, url, message),
        },
      ]);
    }
    return sendWithBot(runtime, em, lookups, tenantId, destination, message);
  },
  async preload(em, deliveries, lookups) {
    const rows = await findDestinationsById(
      em,
      deliveries.map((d) => d.delivery.destination),
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const { delivery, contact } of deliveries) {
      const found = byId.get(delivery.destination);
      lookups.set(
        destinationKey(contact.id, delivery.destination),
        Promise.resolve(found?.contact_id === contact.id ? found : null),
      );
    }
  },
};

/** A Slack channel or a Telegram chat, reached with the tenant's bot token. */
async function sendWithBot(
  runtime: Context,
  em: EntityManager,
  lookups: RunLookups | undefined,
  tenantId: string,
  destination: ChatDestinationRow,
  message: ChatMessage,
) {
  const target =
    destination.provider === 'slack' && destination.channel
      ? { provider: 'slack' as const, to: destination.channel }
      : destination.provider === 'telegram' && destination.chat_id
        ? { provider: 'telegram' as const, to: destination.chat_id }
        : null;
  if (!target) return { status: 'skipped' as const, reason: 'no_destination' as const };
  const transport = await transportOf(runtime, em, lookups, tenantId, target.provider);
  if (!transport || !transport.enabled) return { status: 'skipped' as const, reason: 'no_transport' as const };
  if (transport.state === 'unreadable')
    return { status: 'skipped' as const, reason: 'credentials_unreadable' as const };
  const token = transport.botToken;
  return sendWithFailover(runtime, [
    target.provider === 'slack'
      ? {
          // Slack limits a bot's posting per workspace: one pause for the tenant's bot.
          provider: 'slack',
          circuitKey: `${tenantId}:chat:slack-bot`,
          send: () => sendSlackBot(runtime, token, target.to, message),
        }
      : {
          // Telegram limits a bot to about one message a second per chat: the pause is the chat's.
          provider: 'telegram',
          circuitKey: `${tenantId}:chat:telegram:${target.to}`,
          send: () => sendTelegram(runtime, token, target.to, message),
        },
  ]);
}

// The mobile push channel (APNs, FCM, Expo): one delivery per device subscription. The message is the
// inbox template rendered as plain text (title, body, action URL). A destination the provider reports
// gone (APNs 410 Unregistered, FCM UNREGISTERED, web push 404/410) is deleted in the same job and the
// delivery fails without retry; push_subscription.pruned is emitted with the deletion. The registry
// wires pushChannel(sendPush) from server/channels/push.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, query, queryOne } from '../../base/db/sql.ts';
import { planEachCall } from '../../base/db/prepared.ts';
import type { Context } from '../../base/context.ts';
import type { Channel } from '../../schemas/common.ts';
import { renderInboxDelivery } from '../render-delivery.ts';
import { lookupOnce, type ChannelSender, type DeliveryOutcome, type SkipReason } from '../types.ts';
import { emitWebhookEvent } from '../../webhooks/emit.ts';
import type { PushDestination, PushMessage, PushOutcome } from './messages.ts';
import { loadPushTransport, type LoadedPushTransport } from './tenant-credentials.ts';

/** A contact's stored push subscription (push_subscriptions row). */
interface SubscriptionRow {
  id: string;
  provider: 'apns' | 'fcm' | 'expo' | 'webpush';
  token: string | null;
  endpoint: string | null;
  keys: { p256dh: string; auth: string } | null;
}

/** What the channel sends through: sendPush of server/channels/push (injected, so tests can stand in a provider). */
export type SendPush = (
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  destination: PushDestination,
  message: PushMessage,
  loadTransport?: (provider: PushDestination['provider']) => Promise<LoadedPushTransport | null>,
) => Promise<PushOutcome>;

const SUBSCRIPTION_COLUMNS = 'id, provider, token, endpoint, keys';
const SUBSCRIPTIONS_BY_ID = planEachCall(
  `SELECT ${SUBSCRIPTION_COLUMNS}, contact_id FROM push_subscriptions WHERE id = ANY($1::uuid[])`,
);
const CONTACT_SUBSCRIPTION = `SELECT ${SUBSCRIPTION_COLUMNS} FROM push_subscriptions WHERE id = $1 AND contact_id = $2`;
const DELETE_SUBSCRIPTION = `DELETE FROM push_subscriptions WHERE id = $1`;

function providerDestination(row: SubscriptionRow): PushDestination | null {
  if (row.provider === 'webpush')
    return row.endpoint && row.keys
      ? { provider: 'webpush', subscription: { endpoint: row.endpoint, keys: row.keys } }
      : null;
  return row.token ? { provider: row.provider, token: row.token } : null;
}

/** Shared by push and web_push: they differ only in which subscriptions they address. */
export function subscriptionChannel(channel: Extract<Channel, 'push' | 'web_push'>, sendPush: SendPush): ChannelSender {
  return {
    channel,
    async deliver({ runtime, em, delivery, event, contact, renderVariables, templates, lookups }) {
      const subscriptionKey = subscriptionLookupKey(contact.id, delivery.destination);
      const subscription = await lookupOnce(
        lookups,
        subscriptionKey,
        async () =>
          (await queryOne<SubscriptionRow>(em, CONTACT_SUBSCRIPTION, [delivery.destination, contact.id])) ?? null,
      );
      const destination = subscription ? providerDestination(subscription) : null;
      if (!subscription || !destination) return { status: 'skipped', reason: 'no_destination' };
      const rendered = await renderInboxDelivery(em, event, contact, renderVariables, templates);
      if (!rendered) return { status: 'skipped', reason: 'no_template' };
      const result = await sendPush(
        runtime,
        em,
        event.tenant_id,
        destination,
        {
          title: rendered.title,
          body: rendered.body,
          action_url: rendered.action_url,
          data: { event_id: event.id, type: event.type_key, ...event.variables },
        },
        (provider) =>
          lookupOnce(lookups, `push-transport:${event.tenant_id}:${provider}`, () =>
            loadPushTransport(runtime, em, event.tenant_id, provider),
          ),
      );
      if (result.status === 'dead') {
        lookups?.set(subscriptionKey, Promise.resolve(null));
        // The deletion and its webhook commit together (a savepoint when the caller's transaction holds em).
        await em.transactional(async (tx) => {
          await execute(tx, DELETE_SUBSCRIPTION, [subscription.id]);
          await emitWebhookEvent(tx, event.tenant_id, 'push_subscription.pruned', {
            subscription_id: subscription.id,
            contact_id: contact.id,
            provider: subscription.provider,
            event_id: event.id,
            reason: result.error.slice(0, 300),
          });
        });
      }
      // Recording a 'sent' outcome refreshes the subscription's last_used_at (stages/store.ts).
      return pushOutcome(result);
    },
    async preload(em, deliveries, lookups) {
      const rows = await query<SubscriptionRow & { contact_id: string }>(em, SUBSCRIPTIONS_BY_ID, [
        deliveries.map((d) => d.delivery.destination),
      ]);
      const byId = new Map(rows.map(({ contact_id: contactId, ...row }) => [row.id, { contactId, row }]));
      for (const { delivery, contact } of deliveries) {
        const found = byId.get(delivery.destination);
        lookups.set(
          subscriptionLookupKey(contact.id, delivery.destination),
          Promise.resolve(found?.contactId === contact.id ? found.row : null),
        );
      }
    },
  };
}

const subscriptionLookupKey = (contactId: string, subscriptionId: string) =>
  `push-subscription:${contactId}:${subscriptionId}`;

export function pushOutcome(result: PushOutcome): DeliveryOutcome {
  switch (result.status) {
    case 'sent':
      return { status: 'sent', providerMessageId: result.providerMessageId ?? null };
    case 'dead':
      return { status: 'failed', error: `destination removed: ${result.error}`, retryable: false };
    case 'failed':
      return { status: 'failed', error: result.error, retryable: result.retryable };
    case 'skipped':
      return { status: 'skipped', reason: result.reason as SkipReason };
  }
}

export function pushChannel(sendPush: SendPush): ChannelSender {
  return subscriptionChannel('push', sendPush);
}

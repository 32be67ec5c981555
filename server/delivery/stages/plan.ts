// The plan stage: which deliveries an event gets, one per channel and destination, each either pending
// (to send) or skipped with its reason. Pure: the load stage reads the inputs, the store stage writes
// the result.
//
// - The type's channel_defaults say which channels are on. A trigger's `channels` narrows them: a
//   channel left out is not attempted (no row); a channel listed but off for the type is recorded as
//   skipped 'channel_disabled' (a trigger cannot switch on what the type switched off).
// - A workflow's channel step plans its one channel: left out by the trigger's `channels`, it is
//   recorded as skipped 'not_requested', since the step asked for it.
// - A tenant archived after the trigger: every channel that would be attempted is skipped 'tenant_archived'.
// - Contact opt-outs count only while the type's opt-out policy is on ('opted_out').
// - Destinations: inbox always; email needs the contact's email; push one per apns/fcm/expo
//   subscription; web_push one per webpush subscription; sms needs the contact's phone; chat one per
//   chat destination; http one per contact (the tenant's endpoint); none -> 'no_destination'.
// - Channels without a registered sender are left out entirely (see channels/index.ts).
import { CHANNELS, type Channel } from '../../schemas/common.ts';
import type { SkipReason } from '../../channels/types.ts';
import { LOCAL_CHANNELS_SQL, registeredChannels } from '../../channels/registry.ts';
import type { LoadedEvent } from './load.ts';
import { EVENTS_PER_DELIVERY_JOB, REMOTE_EVENTS_PER_DELIVERY_JOB } from '../queues.ts';

export interface PlanInput {
  channelDefaults: Partial<Record<Channel, boolean>>;
  requestedChannels: Channel[] | null;
  optOutPolicy: boolean;
  /** Explicit contact choices for this type: channel -> enabled. */
  preferences: Partial<Record<Channel, boolean>>;
  tenantArchived: boolean;
  /** null when the contact no longer exists. */
  contactEmail: string | null;
  contactPhone: string | null;
  contactExists: boolean;
  subscriptions: Array<{ id: string; provider: string }>;
  chatDestinations: Array<{ id: string; provider: string }>;
  registered: ReadonlySet<Channel>;
  /** A workflow's channel step: only this channel is planned, with a row even when the trigger leaves it out. */
  step?: Channel;
}

export interface PlannedDelivery {
  channel: Channel;
  destination: string;
  provider: string | null;
  status: 'pending' | 'skipped';
  reason: SkipReason | null;
}

const MOBILE_PROVIDERS = new Set(['apns', 'fcm', 'expo']);

export function planDeliveries(input: PlanInput): PlannedDelivery[] {
  const out: PlannedDelivery[] = [];
  const skip = (channel: Channel, reason: SkipReason) =>
    out.push({ channel, destination: '', provider: null, status: 'skipped', reason });
  for (const channel of CHANNELS) {
    if (!input.registered.has(channel)) continue;
    if (input.step !== undefined && channel !== input.step) continue;
    const onByDefault = input.channelDefaults[channel] === true;
    const listed = input.requestedChannels === null || input.requestedChannels.includes(channel);
    if (input.step === undefined && !(input.requestedChannels ? listed : onByDefault)) continue;
    if (input.tenantArchived) {
      skip(channel, 'tenant_archived');
      continue;
    }
    if (!listed) {
      skip(channel, 'not_requested');
      continue;
    }
    if (!onByDefault) {
      skip(channel, 'channel_disabled');
      continue;
    }
    if (input.optOutPolicy && input.preferences[channel] === false) {
      skip(channel, 'opted_out');
      continue;
    }
    const destinations = destinationsFor(channel, input);
    if (destinations.length === 0) {
      skip(channel, 'no_destination');
      continue;
    }
    for (const d of destinations)
      out.push({ channel, destination: d.destination, provider: d.provider, status: 'pending', reason: null });
  }
  return out;
}

function destinationsFor(channel: Channel, input: PlanInput): Array<{ destination: string; provider: string | null }> {
  if (!input.contactExists) return [];
  switch (channel) {
    case 'inbox':
      return [{ destination: '', provider: null }];
    case 'email':
      return input.contactEmail ? [{ destination: input.contactEmail, provider: null }] : [];
    case 'push':
      return input.subscriptions
        .filter((s) => MOBILE_PROVIDERS.has(s.provider))
        .map((s) => ({ destination: s.id, provider: s.provider }));
    case 'web_push':
      return input.subscriptions
        .filter((s) => s.provider === 'webpush')
        .map((s) => ({ destination: s.id, provider: s.provider }));
    case 'sms':
      // The provider is the one that takes it (failover), recorded with the outcome.
      return input.contactPhone ? [{ destination: input.contactPhone, provider: null }] : [];
    case 'chat':
      return input.chatDestinations.map((d) => ({ destination: d.id, provider: d.provider }));
    case 'http':
      return [{ destination: '', provider: null }];
  }
}

/**
 * The deliveries an event gets from its type's channel defaults and opt-out policy, the contact's
 * preferences and destinations. `only` narrows it to one channel (a workflow's channel step).
 */
export function planEvent(event: LoadedEvent, only?: Channel): PlannedDelivery[] {
  const contact = event.contact;
  const preferences = Object.fromEntries(
    (contact?.preferences ?? []).filter((p) => p.type_key === event.type_key).map((p) => [p.channel, p.enabled]),
  );
  return planDeliveries({
    channelDefaults: event.channel_defaults ?? {},
    requestedChannels: event.channels,
    optOutPolicy: event.opt_out ?? true,
    preferences,
    tenantArchived: event.tenant_archived,
    contactEmail: contact?.email ?? null,
    contactPhone: contact?.phone ?? null,
    contactExists: contact !== null,
    subscriptions: contact?.subscriptions ?? [],
    chatDestinations: contact?.chat_destinations ?? [],
    registered: registeredChannels(),
    step: only,
  });
}

/**
 * The plan's "inbox only" rule in SQL, for eventsPerJobSql: no channel but the inbox is on for the
 * type and asked for by the trigger, and the type has no workflow. `types` is the notification_types
 * alias, `channels` the trigger's channel list (NULL: all). test/delivery/trigger/batch.test.ts holds it to
 * planDeliveries over every combination.
 */
function inboxOnlySql(types: string, channels: string): string {
  return `(${types}.workflow IS NULL AND NOT EXISTS (SELECT 1 FROM jsonb_each(coalesce(${types}.channel_defaults, '{}'::jsonb)) AS d
                 WHERE d.key <> ALL (${LOCAL_CHANNELS_SQL}) AND d.value = 'true'::jsonb AND (${channels} IS NULL OR d.key = ANY (${channels}))))`;
}

/**
 * SQL: how many events of a type may share a delivery job (delivery/enqueue.ts), for the statements
 * that enqueue them (a trigger's, a broadcast page's). Events that can reach the inbox only are stored
 * together by the batched run; other events of a type without a workflow are sent together by the
 * batched remote run; a workflow's events run one by one in the per-event run, so each has a job of
 * its own and a fetched batch of them runs side by side.
 */
export function eventsPerJobSql(types: string, channels: string): string {
  return `(CASE WHEN ${inboxOnlySql(types, channels)} THEN ${EVENTS_PER_DELIVERY_JOB}
                WHEN ${types}.workflow IS NULL THEN ${REMOTE_EVENTS_PER_DELIVERY_JOB} ELSE 1 END)`;
}

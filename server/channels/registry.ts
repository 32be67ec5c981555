// The channel registry: the channels Herald delivers over. The planner fans out only to
// registered channels.
import type { Channel } from '../schemas/common.ts';
import { inboxChannel } from './inbox/channel.ts';
import { emailChannel } from './email/channel.ts';
import { pushChannel } from './push/channel.ts';
import { webPushChannel } from './web-push/channel.ts';
import { httpChannel } from './http/channel.ts';
import { sendPush } from './push/providers.ts';
import { chatChannel } from './chat/channel.ts';
import { smsChannel } from './sms/channel.ts';
import type { ChannelSender } from './types.ts';

const senders: ChannelSender[] = [
  inboxChannel,
  emailChannel,
  pushChannel(sendPush),
  webPushChannel(sendPush),
  smsChannel,
  chatChannel,
  httpChannel,
];

export const channelRegistry: ReadonlyMap<Channel, ChannelSender> = new Map(senders.map((s) => [s.channel, s]));

export function registeredChannels(): ReadonlySet<Channel> {
  return new Set(channelRegistry.keys());
}

/** The channels whose delivery is a row written in Herald's own database (no provider to call). */
export const LOCAL_CHANNELS: ReadonlySet<Channel> = new Set(senders.filter((s) => s.local).map((s) => s.channel));

export function isLocalChannel(channel: Channel): boolean {
  return LOCAL_CHANNELS.has(channel);
}

/** LOCAL_CHANNELS as a SQL array literal, for statements that tell local deliveries from the others. */
export const LOCAL_CHANNELS_SQL = `ARRAY[${[...LOCAL_CHANNELS].map((c) => `'${c}'`).join(', ')}]::text[]`;

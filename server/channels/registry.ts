// The channel registry: the four channels Herald delivers over. The planner fans out only to
// registered channels.
import type { Channel } from '../schemas/common.ts';
import { inboxChannel } from './inbox/channel.ts';
import { emailChannel } from './email/channel.ts';
import { pushChannel } from './push/channel.ts';
import { webPushChannel } from './web-push/channel.ts';
import { sendPush } from './push/providers.ts';
import type { ChannelSender } from './types.ts';

const senders: ChannelSender[] = [
  inboxChannel,
  emailChannel,
  pushChannel(sendPush),
  webPushChannel(sendPush),
];

export const channelRegistry: ReadonlyMap<Channel, ChannelSender> = new Map(senders.map((s) => [s.channel, s]));

export function registeredChannels(): ReadonlySet<Channel> {
  return new Set(channelRegistry.keys());
}

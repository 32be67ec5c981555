// The channel registry: the four channels Herald delivers over. The planner fans out only to
// registered channels.
import type { Channel } from '../../schemas/common.ts';
import { inboxChannel } from './inbox.ts';
import { emailChannel } from './email.ts';
import { pushChannel } from './push.ts';
import { webPushChannel } from './web-push.ts';
import { sendPush } from '../../transports/push/index.ts';
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

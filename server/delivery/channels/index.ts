// The channel registry: which channels this build can deliver. The planner only fans out to
// registered channels, so a channel whose sender is not wired yet is left out entirely (its
// deliveries are neither created nor reported as sent).
import type { Channel } from '../../schemas/common.ts';
import { inboxChannel } from './inbox.ts';
import type { ChannelSender } from './types.ts';

const senders: ChannelSender[] = [
  inboxChannel,
  // integration point: register the other three once their senders are merged:
  //   emailChannel({ renderEmail, dkimSigningFor, sendTenantEmail })   (./email.ts)
  //   pushChannel(sendPush)                                             (./push.ts)
  //   webPushChannel(sendPush)                                          (./web-push.ts)
];

export const channelRegistry: ReadonlyMap<Channel, ChannelSender> = new Map(senders.map((s) => [s.channel, s]));

export function registeredChannels(): ReadonlySet<Channel> {
  return new Set(channelRegistry.keys());
}

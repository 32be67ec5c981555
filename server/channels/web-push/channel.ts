// The browser push channel (VAPID, RFC 8291): one delivery per browser subscription; same flow as
// mobile push (see push.ts), addressed to the contact's 'webpush' subscriptions.
import { subscriptionChannel, type SendPush } from '../push/channel.ts';
import type { ChannelSender } from '../types.ts';

export function webPushChannel(sendPush: SendPush): ChannelSender {
  return subscriptionChannel('web_push', sendPush);
}

// What the channel documents' first sends reach: a provider, here its local peer. Herald is pointed at
// the peer the way the reader points it at the provider: the reader's own value (their Slack webhook
// URL, their Twilio auth token) is the peer's, their endpoint's example URL is rewritten to the peer's,
// and a provider's fixed API (Twilio's) is the install's providers config. Each says what must have
// arrived for its document's examples to have worked, beyond their exit codes.
import { expect } from 'vitest';
import type { ConfigInput } from '../../server/base/config.ts';
import {
  asObject,
  startHttpGatewayPeer,
  startSlackPeer,
  startTwilioPeer,
  verifyStandardWebhook,
  type PeerControls,
} from './provider-peers/index.ts';

export interface FirstSendPeers {
  config: Partial<ConfigInput>;
  /** The reader's own values, as the document tells the reader to set them. */
  env: Record<string, string>;
  substitute: (text: string) => string;
  /** Checks that the document's messages reached the peer; `out` is what its examples printed. */
  check: (out: string) => void;
  close: () => Promise<void>;
}

const closing = (peer: PeerControls) => () => peer.close();

/** docs/channels/chat.md: the Slack incoming webhook the reader makes. */
async function slackWebhook(): Promise<FirstSendPeers> {
  const slack = await startSlackPeer();
  const webhookUrl = slack.webhookUrl();
  return {
    config: {},
    env: { SLACK_WEBHOOK_URL: webhookUrl },
    substitute: (text) => text,
    check: () => {
      const posted = slack.received.map((m) => ({ via: m.via, path: m.path, text: m.text }));
      expect(posted).toEqual([
        { via: 'webhook', path: new URL(webhookUrl).pathname, text: expect.stringContaining('Deploy 1.4.2 is live') },
      ]);
    },
    close: closing(slack),
  };
}

/** docs/channels/sms.md: the reader's Twilio account, under the account SID the example names. */
async function twilioAccount(): Promise<FirstSendPeers> {
  const twilio = await startTwilioPeer({ accountSid: 'AC0123456789abcdef0123456789abcdef' });
  return {
    config: { providers: { twilioUrl: twilio.url } },
    env: { TWILIO_AUTH_TOKEN: twilio.authToken },
    substitute: (text) => text,
    check: () => {
      const sent = twilio.received.map((m) => ({ to: m.to, from: m.from, body: m.body }));
      expect(sent).toEqual([
        { to: '+4915112345678', from: '+15005550006', body: expect.any(String) },
        { to: '+4915112345678', from: '+15005550006', body: expect.stringContaining('Welcome, Ann!') },
      ]);
    },
    close: closing(twilio),
  };
}

/** docs/channels/http.md: the reader's endpoint, which checks Herald's signature. */
async function httpEndpoint(): Promise<FirstSendPeers> {
  const endpoint = await startHttpGatewayPeer();
  return {
    config: {},
    env: {},
    substitute: (text) => text.replace(/https:\/\/hooks\.acme\.example\/herald/g, `${endpoint.url}/herald`),
    check: (out) => {
      // The transport's PUT printed the secret, shown that once: the reader's endpoint verifies with it.
      const secret = /"secret":\s*"(whsec_[^"]+)"/.exec(out)?.[1];
      expect(secret, out).toBeDefined();
      const posts = endpoint.received.filter((r) => r.method === 'POST' && r.path === '/herald');
      expect(posts.map((r) => r.headers.authorization)).toEqual([
        'Bearer my-endpoint-token',
        'Bearer my-endpoint-token',
      ]);
      for (const post of posts) verifyStandardWebhook(secret!, { headers: post.headers, body: post.body });
      const message = asObject(posts[1]!.json);
      expect(message).toMatchObject({
        type: 'order_shipped',
        contact: { external_id: 'user_42' },
        variables: { order_id: 'A-1' },
        rendered: { title: 'Order A-1 shipped', action_url: 'https://acme.example/orders/A-1' },
      });
    },
    close: closing(endpoint),
  };
}

/** The documents whose first send reaches a provider, and the peer standing for it. */
export const FIRST_SENDS: Record<string, () => Promise<FirstSendPeers>> = {
  'docs/channels/chat.md': slackWebhook,
  'docs/channels/http.md': httpEndpoint,
  'docs/channels/sms.md': twilioAccount,
};

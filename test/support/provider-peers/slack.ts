// Slack, both ways Herald posts: incoming webhooks (POST /services/T…/B…/secret, answered with Slack's
// plain-text "ok" or its error words) and the Web API's chat.postMessage with a bot token (always 200
// with {"ok": false, "error": …} on failure, except rate limits: 429 with Retry-After).
import {
  asObject,
  isForm,
  isJson,
  parseForm,
  parseJson,
  pathOf,
  randomFrom,
  startPeerServer,
  type PeerControls,
  type RawRequest,
  type Reply,
} from './base.ts';

export interface SlackMessage {
  via: 'webhook' | 'api';
  /** The webhook path, or "/api/chat.postMessage". */
  path: string;
  /** The channel asked for (Web API only). */
  channel?: string;
  text?: string;
  blocks?: unknown[];
  attachments?: unknown[];
  /** The whole parsed payload. */
  payload: Record<string, unknown>;
  at: number;
}

export interface SlackPeer extends PeerControls {
  botToken: string;
  /** Channel and user ids chat.postMessage knows (a user id posts to the bot's DM with them). */
  channels: Set<string>;
  /** Channels the bot is not a member of: not_in_channel. */
  notInChannel: Set<string>;
  /** Paths of the incoming webhooks that exist. */
  hooks: Set<string>;
  received: SlackMessage[];
  /** Makes a new incoming webhook and returns its full URL. */
  webhookUrl(): string;
  /** Deletes an incoming webhook (then it answers 404 no_service). */
  removeHook(url: string): void;
  /** The next `count` requests get Slack's 429 with Retry-After: `retryAfterSeconds`. */
  rateLimitNext(count: number, retryAfterSeconds?: number): void;
}

const UPPER_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export async function startSlackPeer(
  options: { botToken?: string; channels?: Iterable<string>; notInChannel?: Iterable<string> } = {},
): Promise<SlackPeer> {
  const botToken = options.botToken ?? `xoxb-${randomFrom('0123456789', 12)}-${randomFrom(ALNUM, 24)}`;
  const channels = new Set(options.channels ?? []);
  const notInChannel = new Set(options.notInChannel ?? []);
  const hooks = new Set<string>();
  const received: SlackMessage[] = [];
  const team = `T${randomFrom(UPPER_DIGITS, 10)}`;
  const botId = `B${randomFrom(UPPER_DIGITS, 10)}`;
  let tsCounter = 0;

  const webhook = (request: RawRequest, path: string): Reply => {
    const text = (body: string, status: number): Reply => ({
      status,
      body,
      headers: { 'content-type': 'text/html' },
    });
    if (!hooks.has(path)) return text('no_service', 404);
    if (request.method !== 'POST') return text('invalid_payload', 400);
    // Slack also takes the JSON as a form field named "payload".
    const raw = isForm(request) ? (parseForm(request.body).payload ?? '') : request.body;
    const payload = asObject(parseJson(raw));
    if (!payload) return text('invalid_payload', 400);
    const message = messageOf(payload);
    if (!message.text && !message.blocks && !message.attachments) return text('no_text', 400);
    received.push({ via: 'webhook', path, ...message, payload, at: Date.now() });
    return text('ok', 200);
  };

  const postMessage = (request: RawRequest): Reply => {
    const fail = (error: string): Reply => ({ status: 200, body: { ok: false, error } });
    let payload: Record<string, unknown> | undefined;
    if (isJson(request)) payload = asObject(parseJson(request.body));
    else if (isForm(request)) {
      // A form carries blocks and attachments as JSON strings.
      const fields: Record<string, unknown> = parseForm(request.body);
      for (const name of ['blocks', 'attachments']) {
        if (typeof fields[name] === 'string') fields[name] = parseJson(fields[name]);
      }
      payload = fields;
    }
    if (!payload) return fail('invalid_json');
    const auth = request.headers.authorization;
    const token = auth?.startsWith('Bearer ') ? auth.slice(7) : (payload.token as string | undefined);
    if (!token) return fail('not_authed');
    if (token !== botToken) return fail('invalid_auth');
    const channel = typeof payload.channel === 'string' ? payload.channel : undefined;
    if (!channel || !channels.has(channel)) return fail('channel_not_found');
    if (notInChannel.has(channel)) return fail('not_in_channel');
    const message = messageOf(payload);
    if (!message.text && !message.blocks && !message.attachments) return fail('no_text');
    received.push({ via: 'api', path: '/api/chat.postMessage', channel, ...message, payload, at: Date.now() });
    const ts = `${Math.floor(Date.now() / 1000)}.${String(++tsCounter).padStart(6, '0')}`;
    return {
      status: 200,
      body: {
        ok: true,
        // Posting to a user id lands in the bot's direct message channel with them.
        channel: channel.startsWith('U') || channel.startsWith('W') ? `D${channel.slice(1)}` : channel,
        ts,
        message: {
          type: 'message',
          subtype: 'bot_message',
          bot_id: botId,
          text: message.text ?? '',
          ts,
          ...(message.blocks ? { blocks: message.blocks } : {}),
          ...(message.attachments ? { attachments: message.attachments } : {}),
        },
      },
    };
  };

  const handle = (request: RawRequest): Reply => {
    const path = pathOf(request);
    if (path.startsWith('/services/')) return webhook(request, path);
    if (path === '/api/chat.postMessage') return postMessage(request);
    if (path.startsWith('/api/')) return { status: 200, body: { ok: false, error: 'unknown_method' } };
    return { status: 404, body: 'not found' };
  };

  const controls = await startPeerServer(handle);
  return Object.assign(controls, {
    botToken,
    channels,
    notInChannel,
    hooks,
    received,
    webhookUrl() {
      const path = `/services/${team}/B${randomFrom(UPPER_DIGITS, 10)}/${randomFrom(ALNUM, 24)}`;
      hooks.add(path);
      return controls.url + path;
    },
    removeHook(url: string) {
      hooks.delete(new URL(url).pathname);
    },
    rateLimitNext(count: number, retryAfterSeconds = 1) {
      controls.failNext(count, (request) => ({
        status: 429,
        headers: { 'retry-after': String(retryAfterSeconds) },
        body: pathOf(request).startsWith('/api/') ? { ok: false, error: 'ratelimited' } : 'rate_limited',
      }));
    },
  });
}

function messageOf(payload: Record<string, unknown>): Pick<SlackMessage, 'text' | 'blocks' | 'attachments'> {
  return {
    ...(typeof payload.text === 'string' && payload.text ? { text: payload.text } : {}),
    ...(Array.isArray(payload.blocks) && payload.blocks.length ? { blocks: payload.blocks } : {}),
    ...(Array.isArray(payload.attachments) && payload.attachments.length ? { attachments: payload.attachments } : {}),
  };
}

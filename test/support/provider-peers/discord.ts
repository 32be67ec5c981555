// Discord webhooks: POST /api[/v10]/webhooks/{id}/{token} with JSON {content?, embeds?, username?}.
// Without ?wait=true Discord answers 204; with it, 200 and the message. Errors carry Discord's JSON
// codes (10015 unknown webhook, 50027 invalid token, 50006 empty message, 50035 invalid form body), and
// rate limits are 429 with retry_after in the body and Retry-After and X-RateLimit-* headers.
import {
  asObject,
  isJson,
  parseJson,
  pathOf,
  queryOf,
  randomFrom,
  startPeerServer,
  type PeerControls,
  type RawRequest,
  type Reply,
} from './base.ts';

export interface DiscordMessage {
  id: string;
  webhookId: string;
  content?: string;
  embeds?: Array<Record<string, unknown>>;
  username?: string;
  wait: boolean;
  payload: Record<string, unknown>;
  at: number;
}

export interface DiscordPeer extends PeerControls {
  received: DiscordMessage[];
  /** Makes a new webhook and returns its full URL. */
  webhookUrl(): string;
  /** Deletes a webhook (then it answers 404 Unknown Webhook). */
  removeHook(url: string): void;
  /** The next `count` requests get Discord's 429 with retry_after `retryAfterSeconds`. */
  rateLimitNext(count: number, retryAfterSeconds?: number, global?: boolean): void;
}

const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_';

let snowflakeCounter = 0n;
function snowflake(): string {
  // Milliseconds since the Discord epoch in the top bits, as real ids are.
  return String(((BigInt(Date.now()) - 1420070400000n) << 22n) + snowflakeCounter++);
}

function invalidForm(field: string, code: string, message: string): Reply {
  return {
    status: 400,
    body: { code: 50035, errors: { [field]: { _errors: [{ code, message }] } }, message: 'Invalid Form Body' },
  };
}

export async function startDiscordPeer(): Promise<DiscordPeer> {
  const received: DiscordMessage[] = [];
  // Webhook id -> token.
  const hooks = new Map<string, string>();
  let channelId = snowflake();

  const handle = (request: RawRequest): Reply => {
    const match = /^\/api(?:\/v\d+)?\/webhooks\/(\d+)\/([^/]+)$/.exec(pathOf(request));
    if (!match) return { status: 404, body: { message: '404: Not Found', code: 0 } };
    if (request.method !== 'POST') return { status: 405, body: { message: '405: Method Not Allowed', code: 0 } };
    const [, id, token] = match as unknown as [string, string, string];
    const known = hooks.get(id);
    if (known === undefined) return { status: 404, body: { message: 'Unknown Webhook', code: 10015 } };
    if (known !== token) return { status: 401, body: { message: 'Invalid Webhook Token', code: 50027 } };
    if (!isJson(request)) {
      return { status: 400, body: { message: 'Cannot send an empty message', code: 50006 } };
    }
    const payload = asObject(parseJson(request.body));
    if (!payload) return { status: 400, body: { message: 'The request body contains invalid JSON.', code: 50109 } };
    const content = typeof payload.content === 'string' ? payload.content : undefined;
    const embeds = Array.isArray(payload.embeds) ? (payload.embeds as Array<Record<string, unknown>>) : undefined;
    if (content !== undefined && content.length > 2000) {
      return invalidForm('content', 'BASE_TYPE_MAX_LENGTH', 'Must be 2000 or fewer in length.');
    }
    if (embeds && embeds.length > 10) {
      return invalidForm('embeds', 'BASE_TYPE_MAX_LENGTH', 'Must be 10 or fewer in length.');
    }
    if (!content && !embeds?.length) {
      return { status: 400, body: { message: 'Cannot send an empty message', code: 50006 } };
    }
    const wait = queryOf(request).get('wait') === 'true';
    const username = typeof payload.username === 'string' ? payload.username : undefined;
    const message: DiscordMessage = {
      id: snowflake(),
      webhookId: id,
      ...(content ? { content } : {}),
      ...(embeds?.length ? { embeds } : {}),
      ...(username ? { username } : {}),
      wait,
      payload,
      at: Date.now(),
    };
    received.push(message);
    if (!wait) return { status: 204 };
    return {
      status: 200,
      body: {
        id: message.id,
        type: 0,
        content: content ?? '',
        channel_id: channelId,
        author: { id, username: username ?? 'Herald', bot: true, discriminator: '0000' },
        embeds: embeds ?? [],
        attachments: [],
        mentions: [],
        pinned: false,
        tts: false,
        timestamp: new Date(message.at).toISOString().replace('Z', '+00:00'),
        edited_timestamp: null,
        flags: 0,
        webhook_id: id,
      },
    };
  };

  const controls = await startPeerServer(handle);
  return Object.assign(controls, {
    received,
    webhookUrl() {
      const id = snowflake();
      const token = randomFrom(TOKEN_ALPHABET, 68);
      hooks.set(id, token);
      channelId = snowflake();
      return `${controls.url}/api/webhooks/${id}/${token}`;
    },
    removeHook(url: string) {
      const id = /\/webhooks\/(\d+)\//.exec(new URL(url).pathname)?.[1];
      if (id) hooks.delete(id);
    },
    rateLimitNext(count: number, retryAfterSeconds = 1.5, global = false) {
      controls.failNext(count, {
        status: 429,
        headers: {
          'retry-after': String(Math.ceil(retryAfterSeconds)),
          'x-ratelimit-limit': '5',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset-after': String(retryAfterSeconds),
          'x-ratelimit-scope': global ? 'global' : 'user',
          ...(global ? { 'x-ratelimit-global': 'true' } : {}),
        },
        body: { message: 'You are being rate limited.', retry_after: retryAfterSeconds, global },
      });
    },
  });
}

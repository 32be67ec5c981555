// Google Chat incoming webhooks: POST /v1/spaces/{space}/messages?key=…&token=… with JSON {text} or
// {cardsV2}, answered 200 with the created Message resource. Errors are Google's JSON
// {error: {code, message, status}}: a bad key is 400 INVALID_ARGUMENT, a bad token 403 PERMISSION_DENIED,
// an empty message 400, and quota 429 RESOURCE_EXHAUSTED.
import {
  asObject,
  parseJson,
  pathOf,
  queryOf,
  randomFrom,
  startPeerServer,
  type PeerControls,
  type RawRequest,
  type Reply,
} from './base.ts';

export interface GoogleChatMessage {
  /** The Message resource name, spaces/{space}/messages/{id}. */
  name: string;
  space: string;
  text?: string;
  cardsV2?: unknown[];
  threadKey?: string;
  messageReplyOption?: string;
  payload: Record<string, unknown>;
  at: number;
}

export interface GoogleChatPeer extends PeerControls {
  /** The API key every webhook URL carries. */
  apiKey: string;
  received: GoogleChatMessage[];
  /** Makes a new webhook for `space` (a new space when omitted) and returns its full URL. */
  webhookUrl(space?: string): string;
  /** Revokes a webhook's token (then it answers 403). */
  removeHook(url: string): void;
  /** The next `count` requests get Google's 429 RESOURCE_EXHAUSTED. */
  rateLimitNext(count: number): void;
}

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

function googleError(code: number, status: string, message: string, details?: unknown[]): Reply {
  return { status: code, body: { error: { code, message, status, ...(details ? { details } : {}) } } };
}

export async function startGoogleChatPeer(): Promise<GoogleChatPeer> {
  const apiKey = `AIzaSy${randomFrom(ALNUM, 33)}`;
  const received: GoogleChatMessage[] = [];
  // Token -> the space it posts to.
  const tokens = new Map<string, string>();

  const handle = (request: RawRequest): Reply => {
    const match = /^\/v1\/spaces\/([^/]+)\/messages$/.exec(pathOf(request));
    if (!match) return googleError(404, 'NOT_FOUND', 'Requested entity was not found.');
    if (request.method !== 'POST') return googleError(405, 'UNIMPLEMENTED', 'Method not allowed.');
    const space = match[1]!;
    const query = queryOf(request);
    if (query.get('key') !== apiKey) {
      return googleError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'API_KEY_INVALID',
          domain: 'googleapis.com',
          metadata: { service: 'chat.googleapis.com' },
        },
      ]);
    }
    if (tokens.get(query.get('token') ?? '') !== space) {
      return googleError(
        403,
        'PERMISSION_DENIED',
        'The API is called without a valid token. Instructions on how to use incoming webhooks can be found at https://developers.google.com/chat/how-tos/webhooks',
      );
    }
    const payload = asObject(parseJson(request.body));
    if (!payload) return googleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received. Unexpected token.');
    const text = typeof payload.text === 'string' && payload.text ? payload.text : undefined;
    const cardsV2 = Array.isArray(payload.cardsV2) && payload.cardsV2.length ? payload.cardsV2 : undefined;
    if (!text && !cardsV2) {
      return googleError(400, 'INVALID_ARGUMENT', 'Message cannot be empty. Discarding empty message.');
    }
    const threadKey = query.get('threadKey') ?? (asObject(payload.thread)?.threadKey as string | undefined);
    const replyOption = query.get('messageReplyOption') ?? undefined;
    const id = `${randomFrom(ALNUM, 11)}.${randomFrom(ALNUM, 11)}`;
    const thread = threadKey ? `thr_${threadKey}` : randomFrom(ALNUM, 11);
    const message: GoogleChatMessage = {
      name: `spaces/${space}/messages/${id}`,
      space,
      ...(text ? { text } : {}),
      ...(cardsV2 ? { cardsV2 } : {}),
      ...(threadKey ? { threadKey } : {}),
      ...(replyOption ? { messageReplyOption: replyOption } : {}),
      payload,
      at: Date.now(),
    };
    received.push(message);
    return {
      status: 200,
      body: {
        name: message.name,
        sender: { name: 'users/114022495153014004089', displayName: 'Herald', type: 'BOT' },
        createTime: new Date(message.at).toISOString(),
        ...(text ? { text, formattedText: text, argumentText: text } : {}),
        ...(cardsV2 ? { cardsV2 } : {}),
        thread: { name: `spaces/${space}/threads/${thread}`, ...(threadKey ? { threadKey } : {}) },
        space: { name: `spaces/${space}`, type: 'ROOM', spaceType: 'SPACE', displayName: 'Herald test space' },
        retentionSettings: { state: 'PERMANENT' },
      },
    };
  };

  const controls = await startPeerServer(handle);
  return Object.assign(controls, {
    apiKey,
    received,
    webhookUrl(space = `AAAA${randomFrom(ALNUM, 7)}`) {
      const token = randomFrom(ALNUM, 43);
      tokens.set(token, space);
      return `${controls.url}/v1/spaces/${space}/messages?key=${apiKey}&token=${token}`;
    },
    removeHook(url: string) {
      tokens.delete(new URL(url).searchParams.get('token') ?? '');
    },
    rateLimitNext(count: number) {
      controls.failNext(
        count,
        googleError(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).'),
      );
    },
  });
}

// Mattermost incoming webhooks: POST /hooks/{key} with JSON {text, username?, icon_url?, channel?,
// props?, attachments?} (or a form field "payload" holding that JSON), answered 200 "ok". Mattermost's
// errors are 400 with its AppError JSON: an unknown or deleted key, unparsable data, no text.
import { randomUUID } from 'node:crypto';
import {
  asObject,
  isForm,
  parseForm,
  parseJson,
  pathOf,
  randomFrom,
  startPeerServer,
  type PeerControls,
  type RawRequest,
  type Reply,
} from './base.ts';

export interface MattermostMessage {
  key: string;
  text?: string;
  username?: string;
  iconUrl?: string;
  channel?: string;
  props?: Record<string, unknown>;
  attachments?: unknown[];
  payload: Record<string, unknown>;
  at: number;
}

export interface MattermostPeer extends PeerControls {
  received: MattermostMessage[];
  /** Keys of the webhooks that exist. */
  hooks: Set<string>;
  /** Makes a new webhook and returns its full URL. */
  webhookUrl(): string;
  /** Deletes a webhook (then it answers 400 invalid webhook). */
  removeHook(url: string): void;
}

function appError(id: string, message: string, status = 400): Reply {
  return {
    status,
    body: {
      id,
      message,
      detailed_error: '',
      request_id: randomFrom('abcdefghijklmnopqrstuvwxyz0123456789', 26),
      status_code: status,
    },
    headers: { 'x-request-id': randomUUID() },
  };
}

export async function startMattermostPeer(): Promise<MattermostPeer> {
  const received: MattermostMessage[] = [];
  const hooks = new Set<string>();

  const handle = (request: RawRequest): Reply => {
    const match = /^\/hooks\/([a-z0-9]+)$/.exec(pathOf(request));
    if (!match) return appError('api.context.404.app_error', 'Sorry, we could not find the page.', 404);
    if (request.method !== 'POST')
      return appError('api.context.404.app_error', 'Sorry, we could not find the page.', 404);
    const raw = isForm(request) ? (parseForm(request.body).payload ?? '') : request.body;
    const payload = asObject(parseJson(raw));
    if (!payload) return appError('web.incoming_webhook.parse.app_error', 'Unable to parse incoming data.');
    const text = typeof payload.text === 'string' ? payload.text : '';
    const attachments = Array.isArray(payload.attachments) ? payload.attachments : undefined;
    if (!text && !attachments) return appError('web.incoming_webhook.text.app_error', 'No text specified.');
    const key = match[1]!;
    if (!hooks.has(key)) return appError('web.incoming_webhook.invalid.app_error', 'Invalid webhook.');
    const str = (name: string) => (typeof payload[name] === 'string' ? (payload[name] as string) : undefined);
    received.push({
      key,
      ...(text ? { text } : {}),
      ...(str('username') ? { username: str('username') } : {}),
      ...(str('icon_url') ? { iconUrl: str('icon_url') } : {}),
      ...(str('channel') ? { channel: str('channel') } : {}),
      ...(asObject(payload.props) ? { props: asObject(payload.props) } : {}),
      ...(attachments ? { attachments } : {}),
      payload,
      at: Date.now(),
    });
    return { status: 200, body: 'ok', headers: { 'content-type': 'text/plain' } };
  };

  const controls = await startPeerServer(handle);
  return Object.assign(controls, {
    received,
    hooks,
    webhookUrl() {
      const key = randomFrom('abcdefghijklmnopqrstuvwxyz0123456789', 26);
      hooks.add(key);
      return `${controls.url}/hooks/${key}`;
    },
    removeHook(url: string) {
      hooks.delete(new URL(url).pathname.split('/').pop() ?? '');
    },
  });
}

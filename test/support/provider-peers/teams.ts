// Microsoft Teams incoming webhooks in both forms: the classic Office 365 connector URL
// (/webhookb2/…/IncomingWebhook/…, 200 with body "1") and a Workflows (Power Automate) HTTP trigger
// (/workflows/…/triggers/manual/paths/invoke?…&sig=…, 202 with no body). Both take a message whose
// attachments hold an Adaptive Card; the classic one also takes a MessageCard with text or summary.
import { randomUUID } from 'node:crypto';
import {
  asObject,
  parseJson,
  pathOf,
  queryOf,
  randomFrom,
  randomHex,
  startPeerServer,
  type PeerControls,
  type RawRequest,
  type Reply,
} from './base.ts';

export const ADAPTIVE_CARD = 'application/vnd.microsoft.card.adaptive';

export interface TeamsMessage {
  kind: 'classic' | 'workflow';
  path: string;
  /** The first Adaptive Card's content, when there is one. */
  card?: Record<string, unknown>;
  attachments: unknown[];
  /** A MessageCard's text (classic only). */
  text?: string;
  payload: Record<string, unknown>;
  at: number;
}

export interface TeamsPeer extends PeerControls {
  received: TeamsMessage[];
  /** Makes a new webhook of that kind and returns its full URL. */
  webhookUrl(kind?: 'classic' | 'workflow'): string;
  /** Deletes a webhook (then it answers 404). */
  removeHook(url: string): void;
  /** The next `count` requests get Teams' 429 with Retry-After: `retryAfterSeconds`. */
  rateLimitNext(count: number, retryAfterSeconds?: number): void;
}

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export async function startTeamsPeer(): Promise<TeamsPeer> {
  const received: TeamsMessage[] = [];
  const classicHooks = new Set<string>();
  // Workflow path -> the `sig` its URL carries.
  const workflows = new Map<string, string>();

  const classic = (request: RawRequest, path: string): Reply => {
    if (!classicHooks.has(path)) return { status: 404, body: 'Webhook not found' };
    const payload = asObject(parseJson(request.body));
    if (!payload) return { status: 400, body: 'Bad payload received by generic incoming webhook.' };
    const attachments = Array.isArray(payload.attachments) ? payload.attachments : [];
    const card = adaptiveCard(attachments);
    const text = typeof payload.text === 'string' ? payload.text : undefined;
    const summary = typeof payload.summary === 'string' ? payload.summary : undefined;
    if (attachments.length && !card) {
      return { status: 400, body: 'Bad payload received by generic incoming webhook.' };
    }
    if (!card && !text && !summary) return { status: 400, body: 'Summary or Text is required.' };
    received.push({
      kind: 'classic',
      path,
      ...(card ? { card } : {}),
      attachments,
      ...(text ? { text } : {}),
      payload,
      at: Date.now(),
    });
    return { status: 200, body: '1' };
  };

  const workflow = (request: RawRequest, path: string): Reply => {
    const error = (status: number, code: string, message: string): Reply => ({
      status,
      body: { error: { code, message } },
    });
    const sig = workflows.get(path);
    if (sig === undefined) {
      return error(404, 'WorkflowNotFound', `The workflow '${path.split('/')[2]}' could not be found.`);
    }
    if (queryOf(request).get('sig') !== sig) {
      return error(
        401,
        'DirectApiAuthorizationRequired',
        'The request must be authenticated only by Shared Access scheme.',
      );
    }
    const payload = asObject(parseJson(request.body));
    if (!payload) {
      return error(400, 'InvalidRequestContent', 'The request content is not valid and could not be deserialized.');
    }
    const attachments = Array.isArray(payload.attachments) ? payload.attachments : [];
    const card = adaptiveCard(attachments);
    if (!card) {
      return error(
        400,
        'TriggerInputSchemaMismatch',
        "The input body for trigger 'manual' of type 'Request' did not match its schema definition.",
      );
    }
    received.push({ kind: 'workflow', path, card, attachments, payload, at: Date.now() });
    return { status: 202, body: '' };
  };

  const handle = (request: RawRequest): Reply => {
    const path = pathOf(request);
    if (request.method !== 'POST') return { status: 405, body: 'Method Not Allowed' };
    if (path.startsWith('/webhookb2/')) return classic(request, path);
    if (path.startsWith('/workflows/')) return workflow(request, path);
    return { status: 404, body: 'Not Found' };
  };

  const controls = await startPeerServer(handle);
  return Object.assign(controls, {
    received,
    webhookUrl(kind: 'classic' | 'workflow' = 'classic') {
      if (kind === 'classic') {
        const path = `/webhookb2/${randomUUID()}@${randomUUID()}/IncomingWebhook/${randomHex(32)}/${randomUUID()}/V2${randomFrom(ALNUM, 40)}`;
        classicHooks.add(path);
        return controls.url + path;
      }
      const path = `/workflows/${randomHex(32)}/triggers/manual/paths/invoke`;
      const sig = randomFrom(ALNUM, 43);
      workflows.set(path, sig);
      return `${controls.url}${path}?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=${sig}`;
    },
    removeHook(url: string) {
      const path = new URL(url).pathname;
      classicHooks.delete(path);
      workflows.delete(path);
    },
    rateLimitNext(count: number, retryAfterSeconds = 1) {
      controls.failNext(count, {
        status: 429,
        headers: { 'retry-after': String(retryAfterSeconds) },
        body: 'Microsoft Teams endpoint returned HTTP error 429',
      });
    },
  });
}

function adaptiveCard(attachments: unknown[]): Record<string, unknown> | undefined {
  for (const attachment of attachments) {
    const a = asObject(attachment);
    const content = asObject(a?.content);
    if (a?.contentType === ADAPTIVE_CARD && content?.type === 'AdaptiveCard') return content;
  }
  return undefined;
}

// Posting one message to each chat provider in its own wire format, and reading its answer as a
// ProviderAnswer: sent (with the provider's message id where it gives one), or failed, retryable or
// not. 2xx is sent; 429 is retryable with the pause the provider asks for (Retry-After, Discord's
// retry_after, Telegram's parameters.retry_after); 408 and 5xx and connection failures are retryable;
// any other 4xx is permanent. A webhook the provider no longer knows (Slack 404 no_service, Discord
// 10015 Unknown Webhook, Teams 404, Mattermost's invalid webhook, Google Chat's refused token) fails
// permanently and says so; the destination is kept, for the tenant to replace. Errors name the status
// and the provider's error codes, never a URL or a token (both are credentials here).
import type { Context } from '../../base/context.ts';
import { NonPublicAddressError } from '../../base/net/public-address.ts';
import { allowsPrivate } from '../../base/net/allow-private.ts';
import { answerObject, errorCode, providerCodes, providerRequest, type ProviderResponse } from '../provider-http.ts';
import { retryAfterMs, type ProviderAnswer } from '../failover.ts';
import type { ChatProvider } from '../../schemas/chat.ts';
import type { ChatBlocks } from '../resolve.ts';
import { chatBold, renderChatMarkdown, type ChatSyntax } from './markdown.ts';

/** What a chat delivery posts: a title, a body in the Markdown subset, where it leads, native blocks. */
export interface ChatMessage {
  title: string;
  body: string;
  action_url: string | null;
  blocks?: ChatBlocks | null;
}

const TIMEOUT_MS = 15_000;
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };
const ADAPTIVE_CARD = 'application/vnd.microsoft.card.adaptive';

/** Slack Web API errors worth another attempt; every other ok:false is permanent. */
const SLACK_RETRYABLE = new Set([
  'ratelimited',
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
]);

/** The text of a message in the provider's syntax: the title in bold, the body, the action URL. */
export function messageText(message: ChatMessage, syntax: ChatSyntax): string {
  const link = message.action_url
    ? syntax === 'slack' || syntax === 'google_chat'
      ? `<${message.action_url.replace(/\|/g, '%7C')}>`
      : syntax === 'telegram'
        ? `<a href="${escapeAttribute(message.action_url)}">${escapeAttribute(message.action_url)}</a>`
        : message.action_url
    : '';
  return [chatBold(message.title, syntax), renderChatMarkdown(message.body, syntax), link]
    .filter((part) => part.trim().length > 0)
    .join('\n');
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** The provider's error codes: JSON ones, a plain-text word (Slack's no_service), Discord's numeric code, Mattermost's id. */
function codesOf(response: ProviderResponse): string[] {
  const codes = providerCodes(response.text);
  const body = answerObject(response.text);
  if (body) {
    if (typeof body.code === 'number') codes.push(String(body.code));
    const id = errorCode(body.id);
    if (id) codes.push(id);
    const status = errorCode((body.error as { status?: unknown } | undefined)?.status);
    if (status && !codes.includes(status)) codes.push(status);
  } else {
    const word = errorCode(response.text.trim());
    if (word) codes.push(word);
  }
  return [...new Set(codes)];
}

function describe(response: ProviderResponse, codes = codesOf(response)): string {
  return `HTTP ${response.status}${codes.length ? ` ${codes.join(' ')}` : ''}`;
}

/** The pause a 429 asks for: the Retry-After header, else a retry_after in the body (seconds). */
function pauseOf(response: ProviderResponse, now: number): number | undefined {
  const header = retryAfterMs(response.headers['retry-after'], now);
  if (header !== undefined) return header;
  const body = answerObject(response.text);
  const seconds = body?.retry_after ?? (body?.parameters as { retry_after?: unknown } | undefined)?.retry_after;
  return typeof seconds === 'number' ? retryAfterMs(String(seconds), now) : undefined;
}

/** Whether the webhook itself is gone (deleted, or its token revoked) by the provider's answer. */
function webhookGone(provider: ChatProvider, response: ProviderResponse, codes: string[]): boolean {
  switch (provider) {
    case 'slack':
      return codes.includes('no_service') || codes.includes('no_team') || response.status === 410;
    case 'discord':
      return codes.includes('10015') || codes.includes('50027');
    case 'mattermost':
      return codes.includes('web.incoming_webhook.invalid.app_error');
    case 'google_chat':
      return response.status === 403 || response.status === 404;
    default:
      return response.status === 404 || response.status === 410;
  }
}

/** An answer that is not 2xx, as a failure. */
function failure(
  runtime: Context,
  provider: ChatProvider,
  response: ProviderResponse,
  webhook: boolean,
): ProviderAnswer {
  const codes = codesOf(response);
  const described = describe(response, codes);
  if (response.status === 429) {
    const pause = pauseOf(response, runtime.clock.now());
    return {
      status: 'failed',
      error: `${described}: rate limited`,
      retryable: true,
      ...(pause !== undefined ? { retryAfterMs: pause } : {}),
    };
  }
  if (response.status === 408 || response.status >= 500) return { status: 'failed', error: described, retryable: true };
  if (webhook && webhookGone(provider, response, codes))
    return {
      status: 'failed',
      error: `${described}: the webhook URL no longer exists or was revoked; the destination is kept, replace it with a new URL`,
      retryable: false,
    };
  return { status: 'failed', error: described, retryable: false };
}

/** POSTs JSON; a private address refused by the guard is permanent (the URL will not change by itself). */
async function post(
  runtime: Context,
  url: string,
  body: unknown,
  options: { publicOnly: boolean; headers?: Record<string, string> },
): Promise<ProviderResponse | ProviderAnswer> {
  try {
    return await providerRequest(runtime, url, {
      method: 'POST',
      headers: { ...JSON_HEADERS, ...options.headers },
      body: JSON.stringify(body),
      timeoutMs: TIMEOUT_MS,
      publicOnly: options.publicOnly,
    });
  } catch (error) {
    if (error instanceof NonPublicAddressError)
      return {
        status: 'failed',
        error: `the webhook URL does not reach a public address ${allowsPrivate('allowPrivateWebhookUrls')}`,
        retryable: false,
      };
    throw error;
  }
}

const isAnswer = (value: ProviderResponse | ProviderAnswer): value is ProviderAnswer =>
  'status' in value && typeof value.status === 'string';

function asArray(value: unknown): unknown[] | null {
  if (Array.isArray(value)) return value;
  if (value && typeof value === 'object') return [value];
  return null;
}

/** Slack blocks: an array of Block Kit blocks, or an object holding one under `blocks`. */
function slackBlocks(blocks: ChatBlocks | null | undefined): unknown[] | undefined {
  const value = blocks?.slack;
  if (Array.isArray(value)) return value;
  const inner = (value as { blocks?: unknown } | undefined)?.blocks;
  return Array.isArray(inner) ? inner : undefined;
}

/** The Adaptive Card: the template's own (a whole card, or a card body), else title, body and an Open button. */
export function adaptiveCard(message: ChatMessage): Record<string, unknown> {
  const own = message.blocks?.teams;
  if (own && typeof own === 'object' && !Array.isArray(own) && (own as { type?: unknown }).type === 'AdaptiveCard')
    return own as Record<string, unknown>;
  const body = Array.isArray(own)
    ? own
    : [
        ...(message.title.trim()
          ? [{ type: 'TextBlock', text: message.title, weight: 'Bolder', size: 'Medium', wrap: true }]
          : []),
        ...(message.body.trim()
          ? [{ type: 'TextBlock', text: renderChatMarkdown(message.body, 'teams'), wrap: true }]
          : []),
      ];
  return {
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    type: 'AdaptiveCard',
    version: '1.4',
    body,
    ...(message.action_url ? { actions: [{ type: 'Action.OpenUrl', title: 'Open', url: message.action_url }] } : {}),
  };
}

/** The provider's payload for a webhook URL destination. */
export function webhookPayload(provider: Exclude<ChatProvider, 'telegram'>, message: ChatMessage): unknown {
  switch (provider) {
    case 'slack': {
      const blocks = slackBlocks(message.blocks);
      return { text: messageText(message, 'slack'), ...(blocks ? { blocks } : {}) };
    }
    case 'teams':
      return {
        type: 'message',
        attachments: [{ contentType: ADAPTIVE_CARD, contentUrl: null, content: adaptiveCard(message) }],
      };
    case 'discord': {
      const embeds = asArray(message.blocks?.discord) ?? [
        {
          ...(message.title.trim() ? { title: message.title.slice(0, 256) } : {}),
          ...(message.body.trim() ? { description: renderChatMarkdown(message.body, 'discord').slice(0, 4096) } : {}),
          ...(message.action_url ? { url: message.action_url } : {}),
        },
      ];
      return { embeds: embeds.slice(0, 10) };
    }
    case 'mattermost':
      return { text: messageText(message, 'mattermost') };
    case 'google_chat':
      return { text: messageText(message, 'google_chat') };
  }
}

/** Posts to a destination's incoming webhook URL (the URL a tenant supplied: public addresses only, unless allowed). */
export async function sendWebhook(
  runtime: Context,
  provider: Exclude<ChatProvider, 'telegram'>,
  url: string,
  message: ChatMessage,
): Promise<ProviderAnswer> {
  let target = url;
  if (provider === 'discord') {
    // ?wait=true: Discord answers with the message (its id) instead of 204.
    const withWait = new URL(url);
    withWait.searchParams.set('wait', 'true');
    target = withWait.toString();
  }
  const response = await post(runtime, target, webhookPayload(provider, message), {
    publicOnly: !runtime.config.allowPrivateWebhookUrls,
  });
  if (isAnswer(response)) return response;
  if (response.status < 200 || response.status >= 300) return failure(runtime, provider, response, true);
  // A classic Teams connector reports the service's own refusals in a 200 body.
  if (provider === 'teams' && /returned HTTP error (\d+)/.test(response.text)) {
    const status = Number(/returned HTTP error (\d+)/.exec(response.text)![1]);
    return failure(runtime, provider, { ...response, status, text: '' }, true);
  }
  const body = answerObject(response.text);
  const id = provider === 'discord' ? body?.id : provider === 'google_chat' ? body?.name : undefined;
  return { status: 'sent', providerMessageId: typeof id === 'string' ? id : null };
}

/** chat.postMessage with the tenant's bot token: always 200, with ok:false and an error code on failure. */
export async function sendSlackBot(
  runtime: Context,
  botToken: string,
  channel: string,
  message: ChatMessage,
): Promise<ProviderAnswer> {
  const blocks = slackBlocks(message.blocks);
  const response = await post(
    runtime,
    `${runtime.config.providers.slackUrl.replace(/\/+$/, '')}/api/chat.postMessage`,
    { channel, text: messageText(message, 'slack'), ...(blocks ? { blocks } : {}) },
    { publicOnly: false, headers: { authorization: `Bearer ${botToken}` } },
  );
  if (isAnswer(response)) return response;
  if (response.status < 200 || response.status >= 300) return failure(runtime, 'slack', response, false);
  const body = answerObject(response.text);
  if (body?.ok === true) return { status: 'sent', providerMessageId: typeof body.ts === 'string' ? body.ts : null };
  const code = errorCode(body?.error) ?? 'unknown_error';
  if (code === 'ratelimited') {
    const pause = pauseOf(response, runtime.clock.now());
    return {
      status: 'failed',
      error: `slack ${code}`,
      retryable: true,
      ...(pause !== undefined ? { retryAfterMs: pause } : {}),
    };
  }
  return { status: 'failed', error: `slack ${code}`, retryable: SLACK_RETRYABLE.has(code) };
}

/** sendMessage with the tenant's bot token, as HTML (parse_mode HTML). */
export async function sendTelegram(
  runtime: Context,
  botToken: string,
  chatId: string,
  message: ChatMessage,
): Promise<ProviderAnswer> {
  const response = await post(
    runtime,
    `${runtime.config.providers.telegramUrl.replace(/\/+$/, '')}/bot${botToken}/sendMessage`,
    { chat_id: chatId, text: messageText(message, 'telegram'), parse_mode: 'HTML' },
    { publicOnly: false },
  );
  if (isAnswer(response)) return response;
  const body = answerObject(response.text);
  if (response.status >= 200 && response.status < 300 && body?.ok === true) {
    const id = (body.result as { message_id?: unknown } | undefined)?.message_id;
    return { status: 'sent', providerMessageId: id === undefined ? null : String(id) };
  }
  const answer = failure(runtime, 'telegram', response, false);
  // Telegram's description is its one error detail ("Bad Request: chat not found"); it names no secret.
  const description = typeof body?.description === 'string' ? body.description.slice(0, 160) : '';
  return answer.status === 'failed' && description
    ? { ...answer, error: `HTTP ${response.status}: ${description}` }
    : answer;
}

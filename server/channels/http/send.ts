// One signed POST to a tenant's http endpoint, and what its answer means for the delivery. Signed as
// outbound webhooks are (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature), with the
// delivery's id as webhook-id so a receiver dedupes retries. 2xx: taken (a JSON `id` in the answer is
// kept as the provider's message id); 408, 429 and 5xx: try again later (Retry-After honoured); 410
// and every other 4xx: refused for good, as a retry would be refused the same. Redirects are not
// followed: a 3xx is a refusal too (following one would leave the URL the guard checked).
import type { Context } from '../../base/context.ts';
import { NonPublicAddressError } from '../../base/net/public-address.ts';
import { secretKey, signedHeaders } from '../../webhooks/signing.ts';
import type { ProviderAnswer } from '../failover.ts';
import { retryAfterMs } from '../failover.ts';
import { ProviderUnreachableError, describeAnswer, providerRequest } from '../provider-http.ts';

export const HTTP_TIMEOUT_MS = 10_000;

export interface SignedPost {
  url: string;
  headers: Record<string, string>;
  secret: string;
  /** The webhook-id: the delivery's id, the same on every retry. */
  id: string;
  body: string;
}

/** The answer of one POST, with its HTTP status (null: no answer came). */
export type HttpAnswer = ProviderAnswer & { httpStatus: number | null };

export async function postSigned(runtime: Context, post: SignedPost): Promise<HttpAnswer> {
  const timestamp = Math.floor(runtime.clock.now() / 1000);
  let response;
  try {
    response = await providerRequest(runtime, post.url, {
      method: 'POST',
      headers: {
        'user-agent': 'Herald',
        ...lowerCased(post.headers),
        'content-type': 'application/json',
        ...signedHeaders(secretKey(post.secret), post.id, timestamp, post.body),
      },
      body: post.body,
      timeoutMs: HTTP_TIMEOUT_MS,
      publicOnly: !runtime.config.allowPrivateWebhookUrls,
    });
  } catch (error) {
    if (error instanceof NonPublicAddressError)
      return { status: 'failed', error: error.message, retryable: false, httpStatus: null };
    if (error instanceof ProviderUnreachableError)
      return { status: 'failed', error: error.message, retryable: true, httpStatus: null };
    throw error;
  }
  const status = response.status;
  if (status >= 200 && status < 300)
    return { status: 'sent', providerMessageId: answerId(response.text), httpStatus: status };
  const error = describeAnswer(response);
  if (status === 408 || status === 429 || status >= 500) {
    const wait = retryAfterMs(response.headers['retry-after'], runtime.clock.now());
    return {
      status: 'failed',
      error,
      retryable: true,
      httpStatus: status,
      ...(wait !== undefined ? { retryAfterMs: wait } : {}),
    };
  }
  return {
    status: 'failed',
    error: status >= 300 && status < 400 ? `${error} (redirects are not followed)` : error,
    retryable: false,
    httpStatus: status,
  };
}

/** The `id` of a JSON answer, when it is a short string or a number. */
function answerId(text: string): string | null {
  try {
    const body = JSON.parse(text) as unknown;
    if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
    const id = (body as { id?: unknown }).id;
    if (typeof id === 'number' && Number.isFinite(id)) return String(id);
    return typeof id === 'string' && id.length > 0 && id.length <= 200 ? id : null;
  } catch {
    return null;
  }
}

/** HTTP/2 takes lower-case names only; HTTP/1.1 reads names case-insensitively. */
function lowerCased(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

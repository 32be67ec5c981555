// Web push (RFC 8030) with VAPID (RFC 8292) and aes128gcm payload encryption (RFC 8291). The web-push
// library makes VAPID key pairs and tokens; the payload is encrypted by webpush-encryption.ts, and the
// request goes through our provider HTTP client (deadline, configured CA). Endpoints must be https:
// they come from browsers, so anything else would let a contact make Herald call arbitrary internal
// addresses.
import webpush from 'web-push';
import { createECDH } from 'node:crypto';
import type { Context } from '../../base/context.ts';
import type { PushMessage, PushOutcome, WebPushSubscription } from '../push/messages.ts';
import { describeAnswer, providerRequest } from '../provider-http.ts';
import { NonPublicAddressError } from '../../base/net/public-address.ts';
import { allowsPrivate } from '../../base/net/allow-private.ts';
import { encryptWebPushPayload } from './encryption.ts';

export interface WebPushCredentials {
  subject: string;
  public_key: string;
  private_key: string;
}

/** Time a push service keeps an undelivered message (seconds). */
export const WEB_PUSH_TTL_SECONDS = 24 * 3600;

export function generateVapidKeys(): { public_key: string; private_key: string } {
  const keys = webpush.generateVAPIDKeys();
  return { public_key: keys.publicKey, private_key: keys.privateKey };
}

/** The uncompressed public key (base64url) of a VAPID private key; null when it is not a P-256 scalar. */
export function vapidPublicKeyOf(privateKey: string): string | null {
  try {
    const ecdh = createECDH('prime256v1');
    ecdh.setPrivateKey(Buffer.from(privateKey, 'base64url'));
    return ecdh.getPublicKey().toString('base64url');
  } catch {
    return null;
  }
}

export function webPushPayload(message: PushMessage): string {
  return JSON.stringify({
    title: message.title,
    body: message.body,
    data: message.data ?? {},
    action_url: message.action_url ?? null,
  });
}

/** A VAPID token is valid this long; web-push's own default. */
const VAPID_TOKEN_SECONDS = 12 * 3600;
/** A cached token is replaced this long before it expires, so that none arrives expired at a push service. */
const VAPID_RENEW_BEFORE_SECONDS = 3600;
/** Tokens held at most (one per push service origin and key pair); past it the cache starts over. */
const VAPID_CACHE_MAX = 1000;
const vapidTokens = new Map<string, { authorization: string; expiresAt: number }>();

/**
 * The VAPID Authorization header for a push service origin, signed once per origin and key pair for
 * hours (RFC 8292 lets a token be reused until it expires) rather than per message: the ECDSA signature
 * is one of the costliest steps of a web push.
 */
export function vapidAuthorization(creds: WebPushCredentials, origin: string, nowMs: number): string {
  const key = `${origin} ${creds.subject} ${creds.public_key} ${creds.private_key}`;
  const now = Math.floor(nowMs / 1000);
  const cached = vapidTokens.get(key);
  if (cached && cached.expiresAt - VAPID_RENEW_BEFORE_SECONDS > now) return cached.authorization;
  const expiresAt = now + VAPID_TOKEN_SECONDS;
  const { Authorization: authorization } = webpush.getVapidHeaders(
    origin,
    creds.subject,
    creds.public_key,
    creds.private_key,
    'aes128gcm',
    expiresAt,
  );
  if (vapidTokens.size >= VAPID_CACHE_MAX) vapidTokens.clear();
  vapidTokens.set(key, { authorization, expiresAt });
  return authorization;
}

export async function sendWebPush(
  runtime: Context,
  creds: WebPushCredentials,
  subscription: WebPushSubscription,
  message: PushMessage,
): Promise<PushOutcome> {
  let endpoint: URL;
  try {
    endpoint = new URL(subscription.endpoint);
  } catch {
    return { status: 'dead', error: 'the subscription endpoint is not a URL' };
  }
  if (endpoint.protocol !== 'https:') return { status: 'dead', error: 'the subscription endpoint is not https' };
  let body: Buffer;
  try {
    body = encryptWebPushPayload(subscription.keys, webPushPayload(message));
  } catch (error) {
    // Malformed subscription keys (p256dh not on the curve, short auth): the browser side is broken.
    return { status: 'dead', error: `web push: ${(error as Error).message}` };
  }
  const headers: Record<string, string> = {
    TTL: String(WEB_PUSH_TTL_SECONDS),
    Urgency: 'normal',
    'Content-Type': 'application/octet-stream',
    'Content-Encoding': 'aes128gcm',
    'Content-Length': String(body.length),
  };
  try {
    // The wall clock, not the runtime's: the push service checks the token's expiry against its own.
    headers.Authorization = vapidAuthorization(creds, endpoint.origin, Date.now());
  } catch (error) {
    // The transport's keys, not the subscription, are at fault: the subscription stays.
    return { status: 'failed', error: `web push VAPID credentials: ${(error as Error).message}`, retryable: false };
  }
  let answer;
  try {
    answer = await providerRequest(runtime, subscription.endpoint, {
      method: 'POST',
      headers,
      body,
      // Endpoints come from browsers: never let one point Herald at its own network.
      publicOnly: !runtime.config.allowPrivatePushEndpoints,
    });
  } catch (error) {
    if (error instanceof NonPublicAddressError)
      return {
        status: 'dead',
        error: `web push endpoint refused: ${error.message} ${allowsPrivate('allowPrivatePushEndpoints')}`,
      };
    return { status: 'failed', error: `web push service unreachable: ${(error as Error).message}`, retryable: true };
  }
  if (answer.status >= 200 && answer.status < 300) {
    const location = answer.headers.location;
    return { status: 'sent', providerMessageId: typeof location === 'string' ? location : undefined };
  }
  const error = `web push ${describeAnswer(answer)}`;
  if (answer.status === 404 || answer.status === 410) return { status: 'dead', error };
  return { status: 'failed', error, retryable: answer.status === 429 || answer.status >= 500 };
}

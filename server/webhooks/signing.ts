// Standard Webhooks signatures: the secret is `whsec_` + base64 of 24 random bytes; a message is
// signed as `v1,` + base64(HMAC-SHA256(secret bytes, `${id}.${timestamp}.${body}`)).
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

export function newWebhookSecret(): string {
  return PREFIX + randomBytes(24).toString('base64');
}

export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** The three headers of a signed message; `timestamp` in seconds since the epoch. */
export function signedHeaders(key: Buffer, id: string, timestamp: number, body: string): Record<string, string> {
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` };
}

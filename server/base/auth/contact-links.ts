// Signed links that act for one contact without a credential: one-click unsubscribe (scoped to a
// contact and a notification type), the hosted preference page (scoped to a contact), and the VERP
// bounce address (scoped to one delivery). They are HMACs under a key derived from the install's
// token signing secret, so every process verifies them and no state is stored; a forged or altered
// token fails the constant-time comparison. They do not expire: mailbox providers call an
// unsubscribe link long after the mail was sent (RFC 8058).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { TokenSigner } from './tokens.ts';
import { isUuid } from '../ids.ts';

export type ContactLink =
  | { kind: 'unsubscribe'; tenantId: string; contactId: string; typeKey: string }
  | { kind: 'preferences'; tenantId: string; contactId: string };

const keys = new WeakMap<TokenSigner, Buffer>();
function keyOf(tokens: TokenSigner): Buffer {
  let key = keys.get(tokens);
  if (!key) {
    key = tokens.derive('contact-links');
    keys.set(tokens, key);
  }
  return key;
}

function mac(tokens: TokenSigner, message: string): Buffer {
  return createHmac('sha256', keyOf(tokens)).update(message).digest();
}

export function signContactLink(tokens: TokenSigner, link: ContactLink): string {
  const fields =
    link.kind === 'unsubscribe'
      ? ['u', link.tenantId, link.contactId, link.typeKey]
      : ['p', link.tenantId, link.contactId];
  const payload = Buffer.from(fields.join('\n'), 'utf8').toString('base64url');
  return `${payload}.${mac(tokens, payload).toString('base64url')}`;
}

/** The link a token names, or null for anything forged, altered or malformed. */
export function verifyContactLink(tokens: TokenSigner, token: string): ContactLink | null {
  if (token.length > 512) return null;
  const match = /^([A-Za-z0-9_-]{1,400})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return null;
  const given = Buffer.from(match[2]!, 'base64url');
  const expected = mac(tokens, match[1]!);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  const fields = Buffer.from(match[1]!, 'base64url').toString('utf8').split('\n');
  const [kind, tenantId, contactId, typeKey] = fields;
  if (!tenantId || !contactId || !isUuid(tenantId) || !isUuid(contactId)) return null;
  if (kind === 'u' && fields.length === 4 && typeKey) return { kind: 'unsubscribe', tenantId, contactId, typeKey };
  if (kind === 'p' && fields.length === 3) return { kind: 'preferences', tenantId, contactId };
  return null;
}

/** The VERP token of a delivery: its id in hex and 80 bits of MAC, lower case (mail systems may fold case). */
export function bounceToken(tokens: TokenSigner, deliveryId: string): string {
  const hex = deliveryId.replace(/-/g, '').toLowerCase();
  return hex + mac(tokens, `bounce\n${hex}`).toString('hex').slice(0, 20);
}

/** The delivery id a VERP token names, or null. */
export function verifyBounceToken(tokens: TokenSigner, token: string): string | null {
  const match = /^([0-9a-f]{32})([0-9a-f]{20})$/.exec(token.toLowerCase());
  if (!match) return null;
  const expected = Buffer.from(mac(tokens, `bounce\n${match[1]}`).toString('hex').slice(0, 20));
  const given = Buffer.from(match[2]!);
  if (!timingSafeEqual(given, expected)) return null;
  const h = match[1]!;
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

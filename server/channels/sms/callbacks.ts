// What a provider's callback says, once its signature holds: a delivery receipt (the provider's
// message id and what became of it) or an inbound message (its sender, and whether it is an opt-out
// or opt-in keyword). Twilio signs every callback with the auth token (X-Twilio-Signature); Vonage
// signs when the account has a signature secret, else the callback URL's unguessable token is what
// admits it. The route (api/routes/provider-callbacks.ts) records what the callback says.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../../base/db/sql.ts';
import { normalisePhone } from '../../schemas/contacts.ts';
import { codeOf } from './answers.ts';
import type { LoadedSmsTransport } from './sms-transports.ts';
import { validTwilioSignature } from './twilio.ts';
import { validVonageSignature } from './vonage.ts';

export type SmsCallback =
  | { kind: 'receipt'; providerMessageId: string; status: 'delivered' | 'failed'; error: string | null }
  | { kind: 'inbound'; from: string; action: 'stop' | 'start' | null }
  /** Nothing to record: an intermediate status (queued, sent, buffered), or a callback Herald does not use. */
  | { kind: 'ignored' };

/** Carriers' and Twilio's standard opt-out and opt-in keywords (the whole message, any case). */
const STOP_WORDS = new Set(['STOP', 'STOPALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'OPTOUT', 'REVOKE']);
const START_WORDS = new Set(['START', 'UNSTOP', 'YES']);

const CONTACTS_BY_PHONE = `SELECT id FROM contacts WHERE tenant_id = $1 AND phone = $2 ORDER BY created_at LIMIT 100`;

function keywordAction(text: string): 'stop' | 'start' | null {
  const word = text
    .trim()
    .replace(/[.!]+$/, '')
    .toUpperCase();
  if (STOP_WORDS.has(word)) return 'stop';
  if (START_WORDS.has(word)) return 'start';
  return null;
}

const messageIdOf = (value: string | null | undefined) => (value && /^[A-Za-z0-9-]{1,100}$/.test(value) ? value : null);

/** Whether a Twilio callback is signed with the transport's auth token, over the URL Twilio called. */
export function twilioCallbackAuthentic(
  transport: LoadedSmsTransport,
  url: string,
  params: URLSearchParams,
  signature: string | null,
): boolean {
  if (transport.state !== 'ready' || transport.credentials.provider !== 'twilio') return false;
  return validTwilioSignature(transport.credentials.auth_token, url, params, signature);
}

export function parseTwilioCallback(params: URLSearchParams): SmsCallback {
  const status = params.get('MessageStatus');
  if (status !== null) {
    const id = messageIdOf(params.get('MessageSid'));
    if (!id) return { kind: 'ignored' };
    if (status === 'delivered') return { kind: 'receipt', providerMessageId: id, status: 'delivered', error: null };
    if (status === 'failed' || status === 'undelivered') {
      const code = codeOf(params.get('ErrorCode'));
      return {
        kind: 'receipt',
        providerMessageId: id,
        status: 'failed',
        error: `twilio ${status}${code ? ` error ${code}` : ''}`,
      };
    }
    return { kind: 'ignored' };
  }
  const from = normalisePhone(params.get('From') ?? '');
  if (from && params.has('Body')) return { kind: 'inbound', from, action: keywordAction(params.get('Body') ?? '') };
  return { kind: 'ignored' };
}

/** Whether a Vonage callback is admitted: signed with the signature secret when the transport has one. */
export function vonageCallbackAuthentic(
  transport: LoadedSmsTransport,
  params: Record<string, string>,
  now: number,
): boolean {
  if (transport.state !== 'ready' || transport.credentials.provider !== 'vonage') return false;
  const secret = transport.credentials.signature_secret;
  return secret ? validVonageSignature(params, secret, now) : true;
}

export function parseVonageCallback(params: Record<string, string>): SmsCallback {
  if (params.text !== undefined && params.msisdn !== undefined) {
    const from = normalisePhone(`+${params.msisdn.replace(/^\+/, '')}`);
    return from ? { kind: 'inbound', from, action: keywordAction(params.text) } : { kind: 'ignored' };
  }
  // Each part of a long text has a receipt of its own, all with the send's client-ref: the delivery's
  // reference (vonage.ts). A message sent without one is known by its (first part's) message id.
  const id = messageIdOf(params['client-ref']) ?? messageIdOf(params.messageId ?? params['message-id']);
  if (!id || params.status === undefined) return { kind: 'ignored' };
  if (params.status === 'delivered')
    return { kind: 'receipt', providerMessageId: id, status: 'delivered', error: null };
  if (['failed', 'rejected', 'expired'].includes(params.status)) {
    const code = codeOf(params['err-code']);
    return {
      kind: 'receipt',
      providerMessageId: id,
      status: 'failed',
      error: `vonage ${params.status}${code ? ` err-code ${code}` : ''}`,
    };
  }
  return { kind: 'ignored' };
}

/** The tenant's contacts with this phone number (E.164). */
export async function contactsWithPhone(em: EntityManager, tenantId: string, phone: string): Promise<string[]> {
  const rows = await query<{ id: string }>(em, CONTACTS_BY_PHONE, [tenantId, phone]);
  return rows.map((r) => r.id);
}

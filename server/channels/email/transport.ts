// Sending a tenant's email: through its relays in order (relays.ts: the tenant's primary transport,
// else the install's default SMTP; then the tenant's fallback), else skipped (no_transport). A send
// moves on to the next relay within the same attempt when one fails for now (no connection, a
// timeout, an SMTP 4xx) or fails for reasons of its own (authentication, TLS, a host the guard
// refuses, a password the key ring cannot decrypt); a permanent refusal of the message (a 5xx to its
// recipient or content) fails the delivery at once, as another relay would refuse it too. When every
// relay's password is unreadable the mail is skipped with credentials_unreadable rather than failing.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { DkimSigning, OutgoingMail, SmtpSettings } from './smtp.ts';
import type { ChannelContext, DeliveryOutcome } from '../types.ts';
import { isUnreadable } from '../../base/crypto/keyring.ts';
import type { Context } from '../../base/context.ts';
import { NonPublicAddressError } from '../../base/net/public-address.ts';
import {
  loadEmailTransport,
  loadEmailTransports,
  SMTP_HOST_REFUSED,
  type LoadedEmailTransports,
} from './tenant-smtp.ts';
import { dkimSigningFor } from './sender-domains.ts';
import { installSmtp } from './install-smtp.ts';
import { addressOf, tenantRelays, type EmailRelay } from './relays.ts';
import { sendWithFailover, type ProviderAnswer } from '../failover.ts';

export type EmailOutcome =
  | { status: 'sent'; messageId: string }
  | { status: 'skipped'; reason: 'no_transport' | 'credentials_unreadable' }
  | { status: 'failed'; error: string; retryable: boolean };

export interface TenantMail {
  to: string;
  subject: string;
  html: string;
  text: string;
  fromName?: string | null;
  fromEmail?: string | null;
  replyTo?: string | null;
  /** Chooses the DKIM signature for the From address finally used (brand sender or transport default). */
  sign?: (fromEmail: string) => Promise<DkimSigning | null>;
  /** Extra headers (List-Unsubscribe). */
  headers?: Record<string, string>;
  /** The envelope sender (VERP bounce address); the From address when absent. */
  envelopeFrom?: string | null;
}

/** "Name" <address>, with the display name quoted and stripped of line breaks. */
export function formatFrom(address: string, name?: string | null): string {
  const clean = (name ?? '').replace(/[\r\n]+/g, ' ').trim();
  return clean ? `"${clean.replace(/["\\]/g, '\\$&')}" <${address}>` : address;
}

interface SmtpErrorLike {
  code?: string;
  responseCode?: number;
  message?: string;
}

export function classifySmtpError(error: unknown): { error: string; retryable: boolean } {
  const e = (error ?? {}) as SmtpErrorLike;
  const message = String(e.message ?? error)
    .replace(/\s+/g, ' ')
    .slice(0, 500);
  if (typeof e.responseCode === 'number') return { error: message, retryable: e.responseCode < 500 };
  // No SMTP answer at all: connection refused, DNS, TLS, timeouts. Auth failures carry a 535 above.
  return { error: message, retryable: e.code !== 'EAUTH' && e.code !== 'EENVELOPE' && e.code !== 'EMESSAGE' };
}

/** Enhanced status codes of the relay's own state (RFC 3463: 4.3.x mail system, 4.4.x network or routing). */
const RELAY_STATUS = /\b4\.[34]\.\d{1,3}\b/;

/**
 * A failure of the relay rather than of the message: anything but the server refusing the envelope
 * or the content (EENVELOPE, EMESSAGE), which another relay would refuse the same way, unless the
 * refusal speaks of the relay itself (421 closing the channel, "452 4.3.1 insufficient storage").
 */
export function relayFault(error: unknown): boolean {
  const e = (error ?? {}) as SmtpErrorLike;
  if (e.code !== 'EENVELOPE' && e.code !== 'EMESSAGE') return true;
  return e.responseCode === 421 || RELAY_STATUS.test(String(e.message ?? ''));
}

type RelayAnswer =
  { status: 'sent'; messageId: string } | { status: 'failed'; error: string; retryable: boolean; relayFault: boolean };

async function sendThrough(runtime: ChannelContext, settings: SmtpSettings, mail: OutgoingMail): Promise<RelayAnswer> {
  try {
    const sent = await runtime.smtp.send(settings, mail);
    if (sent.accepted.length === 0 && sent.rejected.length > 0)
      return { status: 'failed', error: `recipient rejected: ${sent.response}`, retryable: false, relayFault: false };
    return { status: 'sent', messageId: sent.messageId };
  } catch (error) {
    // A tenant's host that resolves only to non-public addresses now: refused before any connection.
    if (error instanceof NonPublicAddressError)
      return { status: 'failed', error: SMTP_HOST_REFUSED, retryable: false, relayFault: true };
    return { status: 'failed', ...classifySmtpError(error), relayFault: relayFault(error) };
  }
}

/** Sends one mail with the given SMTP settings through the runtime's pooled transports. */
export async function deliverEmail(
  runtime: ChannelContext,
  settings: SmtpSettings,
  mail: OutgoingMail,
): Promise<EmailOutcome> {
  const answer = await sendThrough(runtime, settings, mail);
  return answer.status === 'sent' ? answer : { status: 'failed', error: answer.error, retryable: answer.retryable };
}

const UNREADABLE_RELAY = 'credentials_unreadable: its password cannot be decrypted with the key ring; set it again';

/** The mail as this relay sends it: its From, Reply-To and DKIM signature. */
async function mailFor(relay: EmailRelay, mail: TenantMail): Promise<OutgoingMail> {
  let fromEmail = mail.fromEmail ?? null;
  let replyTo = mail.replyTo ?? null;
  // On the install's shared SMTP a brand may only claim a From address on one of its tenant's verified
  // sender domains. Otherwise the mail comes from the install's address, with the brand's address as
  // Reply-To, so no tenant can send as another (or as the operator).
  if (relay.shared && fromEmail && !(mail.sign && (await mail.sign(fromEmail)))) {
    replyTo ??= fromEmail;
    fromEmail = null;
  }
  const finalFrom = fromEmail ?? relay.defaultFrom.email;
  const from = fromEmail
    ? formatFrom(fromEmail, mail.fromName)
    : formatFrom(relay.defaultFrom.email, mail.fromName ?? relay.defaultFrom.name);
  const dkim = mail.sign ? await mail.sign(finalFrom) : null;
  return {
    from,
    to: mail.to,
    subject: mail.subject,
    html: mail.html,
    text: mail.text,
    ...(replyTo ? { replyTo } : {}),
    ...(dkim ? { dkim } : {}),
    ...(mail.headers && Object.keys(mail.headers).length > 0 ? { headers: mail.headers } : {}),
    ...(mail.envelopeFrom ? { envelope: { from: mail.envelopeFrom, to: mail.to } } : {}),
  };
}

/**
 * One relay's answer. With another relay to ask, a fault of this relay's own is worth asking the next
 * (and, once every relay has been asked, another attempt later); alone, it is as final as before.
 */
async function relayAnswer(
  runtime: ChannelContext,
  relay: EmailRelay,
  mail: TenantMail,
  others: boolean,
): Promise<ProviderAnswer> {
  if (!relay.settings) return { status: 'failed', error: UNREADABLE_RELAY, retryable: true };
  const answer = await sendThrough(runtime, relay.settings, await mailFor(relay, mail));
  if (answer.status === 'sent') return { status: 'sent', providerMessageId: answer.messageId };
  return {
    status: 'failed',
    error: answer.error,
    retryable: answer.retryable || (others && answer.relayFault),
    ...(answer.relayFault ? {} : { messageFault: true }),
  };
}

/**
 * Sends through the tenant's relays with failover; the outcome names the relay that answered and
 * every relay asked. `loadTransports`: the tenant's transports (a run's shared lookup); read from the
 * database by default.
 */
export async function sendTenantMail(
  runtime: ChannelContext,
  em: EntityManager,
  tenantId: string,
  mail: TenantMail,
  loadTransports: () => Promise<LoadedEmailTransports> = () => loadEmailTransports(runtime, em, tenantId),
): Promise<DeliveryOutcome> {
  const relays = await tenantRelays(runtime, em, tenantId, await loadTransports());
  if (relays.length === 0) return { status: 'skipped', reason: 'no_transport' };
  if (relays.every((relay) => !relay.settings)) return { status: 'skipped', reason: 'credentials_unreadable' };
  const others = relays.length > 1;
  return sendWithFailover(
    runtime,
    relays.map((relay) => ({
      provider: relay.provider,
      circuitKey: relay.circuitKey,
      send: () => relayAnswer(runtime, relay, mail, others),
    })),
  );
}

/** sendTenantMail's outcome without its trail, for callers that need only what happened. */
export async function sendTenantEmail(
  runtime: ChannelContext,
  em: EntityManager,
  tenantId: string,
  mail: TenantMail,
): Promise<EmailOutcome> {
  const outcome = await sendTenantMail(runtime, em, tenantId, mail);
  switch (outcome.status) {
    case 'sent':
    case 'delivered':
      return { status: 'sent', messageId: outcome.providerMessageId ?? '' };
    case 'skipped':
      return {
        status: 'skipped',
        reason: outcome.reason === 'credentials_unreadable' ? outcome.reason : 'no_transport',
      };
    case 'failed':
      return { status: 'failed', error: outcome.error, retryable: outcome.retryable };
  }
}

/**
 * What a brand's sender settings will not do, as sendTenantEmail applies them, for the brand's
 * responses: a tenant without a transport of its own sends through the install's default SMTP, which
 * sends from a brand's address only on one of the tenant's verified sender domains (DKIM-signed), else
 * from the install's address with the brand's as Reply-To. The tenant's transport is looked up once.
 */
export function brandSenderWarnings(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
): (sender: { from_email?: string | null; reply_to?: string | null }) => Promise<string[]> {
  let installFrom: Promise<string | null> | undefined;
  const throughInstall = async (): Promise<string | null> => {
    if (await loadEmailTransport(runtime, em, tenantId)) return null;
    try {
      const install = await installSmtp(runtime, em);
      return install ? addressOf(install.from).email : null;
    } catch (error) {
      // Email is skipped (credentials_unreadable) until the default is set again: no From to speak of.
      if (isUnreadable(error)) return null;
      throw error;
    }
  };
  return async (sender) => {
    const fromEmail = sender.from_email;
    if (!fromEmail) return [];
    const installAddress = await (installFrom ??= throughInstall());
    if (installAddress === null || (await dkimSigningFor(runtime, em, tenantId, fromEmail))) return [];
    const domain = fromEmail.slice(fromEmail.lastIndexOf('@') + 1);
    return [
      `sender.from_email ${fromEmail} is not used: this tenant's email goes through the install's default SMTP, ` +
        `which sends from a brand's address only on a verified sender domain of the tenant; its email comes from ` +
        `${installAddress}, with ${sender.reply_to ?? fromEmail} as Reply-To. Verify ${domain} as a sender domain, ` +
        `or set the tenant's own email transport`,
    ];
  };
}

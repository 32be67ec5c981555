// Sending a tenant's email: through the tenant's own transport, else the install's default SMTP, else
// skipped (no_transport). A transport whose password cannot be decrypted is skipped with
// credentials_unreadable rather than failing. SMTP permanent rejections (5xx) are not retried;
// connection problems and temporary (4xx) answers are.
import type { EntityManager } from '@mikro-orm/postgresql';
import { installSmtp } from './install-smtp.ts';
import type { DkimSigning, OutgoingMail, SmtpSettings } from './smtp.ts';
import type { ChannelContext } from '../types.ts';
import { isUnreadable } from '../../base/crypto/keyring.ts';
import type { Context } from '../../base/context.ts';
import { NonPublicAddressError } from '../../base/net/public-address.ts';
import { loadEmailTransport, SMTP_HOST_REFUSED, type LoadedEmailTransport } from './tenant-smtp.ts';
import { dkimSigningFor } from './sender-domains.ts';

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

/** The address part of a From header ("Herald <herald@x>" -> herald@x). */
function addressOf(from: string): { email: string; name: string | null } {
  const match = /^\s*"?([^"<]*?)"?\s*<([^>]+)>\s*$/.exec(from);
  return match ? { email: match[2]!, name: match[1] || null } : { email: from.trim(), name: null };
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

/** Sends one mail with the given SMTP settings through the runtime's pooled transports. */
export async function deliverEmail(
  runtime: ChannelContext,
  settings: SmtpSettings,
  mail: OutgoingMail,
): Promise<EmailOutcome> {
  try {
    const sent = await runtime.smtp.send(settings, mail);
    if (sent.accepted.length === 0 && sent.rejected.length > 0)
      return { status: 'failed', error: `recipient rejected: ${sent.response}`, retryable: false };
    return { status: 'sent', messageId: sent.messageId };
  } catch (error) {
    // A tenant's host that resolves only to non-public addresses now: refused before any connection.
    if (error instanceof NonPublicAddressError) return { status: 'failed', error: SMTP_HOST_REFUSED, retryable: false };
    return { status: 'failed', ...classifySmtpError(error) };
  }
}

/** `loadTransport`: how to find the tenant's own transport (a run's shared lookup); read from the database by default. */
export async function sendTenantEmail(
  runtime: ChannelContext,
  em: EntityManager,
  tenantId: string,
  mail: TenantMail,
  loadTransport: () => Promise<LoadedEmailTransport | null> = () => loadEmailTransport(runtime, em, tenantId),
): Promise<EmailOutcome> {
  let settings: SmtpSettings;
  let defaultFrom: { email: string; name: string | null };
  let fromEmail = mail.fromEmail ?? null;
  let replyTo = mail.replyTo ?? null;
  const own = await loadTransport();
  if (own?.state === 'unreadable') return { status: 'skipped', reason: 'credentials_unreadable' };
  if (own) {
    // Its host is checked as each connection opens (smtp.ts), not per mail.
    settings = own.settings;
    defaultFrom = { email: own.fromEmail, name: own.fromName };
  } else {
    let install;
    try {
      install = await installSmtp(runtime, em);
    } catch (error) {
      if (isUnreadable(error)) return { status: 'skipped', reason: 'credentials_unreadable' };
      throw error;
    }
    if (!install) return { status: 'skipped', reason: 'no_transport' };
    settings = install.settings;
    defaultFrom = addressOf(install.from);
    // The install's SMTP is shared by every tenant: a brand may only claim a From address on one of its
    // tenant's verified sender domains. Otherwise the mail comes from the install's address, with the
    // brand's address as Reply-To, so no tenant can send as another (or as the operator).
    if (fromEmail && !(mail.sign && (await mail.sign(fromEmail)))) {
      replyTo ??= fromEmail;
      fromEmail = null;
    }
  }
  const finalFrom = fromEmail ?? defaultFrom.email;
  const from = fromEmail
    ? formatFrom(fromEmail, mail.fromName)
    : formatFrom(defaultFrom.email, mail.fromName ?? defaultFrom.name);
  const dkim = mail.sign ? await mail.sign(finalFrom) : null;
  return deliverEmail(runtime, settings, {
    from,
    to: mail.to,
    subject: mail.subject,
    html: mail.html,
    text: mail.text,
    ...(replyTo ? { replyTo } : {}),
    ...(dkim ? { dkim } : {}),
    ...(mail.headers && Object.keys(mail.headers).length > 0 ? { headers: mail.headers } : {}),
    ...(mail.envelopeFrom ? { envelope: { from: mail.envelopeFrom, to: mail.to } } : {}),
  });
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

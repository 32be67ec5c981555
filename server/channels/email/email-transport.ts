// The tenant's own SMTP transports (a primary and a fallback, one of each per tenant) and the
// install's default SMTP. The password is write-only: stored as a key-ring ciphertext bound to the
// tenant's row and slot, never returned.
import type { EntityManager } from '@mikro-orm/postgresql';
import { emailTransportPasswordAad, installSecretAad } from '../../base/crypto/aad.ts';
import { isUnreadable } from '../../base/crypto/keyring.ts';
import { execute, queryOne } from '../../base/db/sql.ts';
import { deleteInstallSecret, readInstallSecret, storeInstallSecret } from '../../base/install-secrets.ts';
import { DEFAULT_SMTP_SECRET, installSmtp } from './install-smtp.ts';
import { smtpSettingsFromUrl, type SmtpSettings } from './smtp.ts';
import { loadEmailTransport, smtpHostRefusal, type EmailTransportRow, type EmailTransportSlot } from './tenant-smtp.ts';
import { AppError, invalidField } from '../../base/errors.ts';
import type { Context } from '../../base/context.ts';
import type { ChannelContext } from '../types.ts';
import type {
  EmailTransportRequest,
  EmailTransportResponse,
  InstallDefaultSmtp,
  SendTestEmailResult,
} from '../../schemas/transports.ts';
import { deliverEmail, formatFrom } from './transport.ts';

/** The server the stored password was given for. */
const STORED_SERVER = `SELECT host, port, secure, username, password_ciphertext IS NOT NULL AS has_password
       FROM email_transports WHERE tenant_id = $1 AND slot = $2`;
/** Creates or replaces the transport in slot $10; $9 keeps the stored password. */
const PUT_TRANSPORT = `INSERT INTO email_transports
       (tenant_id, host, port, secure, username, password_ciphertext, from_email, from_name, slot)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $10)
     ON CONFLICT (tenant_id, slot) DO UPDATE SET host = EXCLUDED.host, port = EXCLUDED.port, secure = EXCLUDED.secure,
       username = EXCLUDED.username, from_email = EXCLUDED.from_email, from_name = EXCLUDED.from_name,
       password_ciphertext = CASE WHEN $9 THEN email_transports.password_ciphertext ELSE EXCLUDED.password_ciphertext END,
       updated_at = now()`;
const DELETE_TRANSPORT = `DELETE FROM email_transports WHERE tenant_id = $1 AND slot = $2`;

function toEmailTransportResponse(row: EmailTransportRow, unreadable: boolean): EmailTransportResponse {
  return {
    configured: true,
    host: row.host,
    port: row.port,
    secure: row.secure,
    username: row.username,
    from_email: row.from_email,
    from_name: row.from_name,
    credentials_unreadable: unreadable,
  };
}

/**
 * The tenant's transport in a slot. Without a primary, its email goes through the install's default
 * SMTP, which the answer names; a missing fallback is just not configured.
 */
export async function getEmailTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  slot: EmailTransportSlot = 'primary',
): Promise<EmailTransportResponse> {
  const loaded = await loadEmailTransport(runtime, em, tenantId, slot);
  if (!loaded)
    return slot === 'primary'
      ? { configured: false, install_default: await installDefaultOf(runtime, em) }
      : { configured: false };
  return toEmailTransportResponse(loaded.row, loaded.state === 'unreadable');
}

/**
 * Creates or replaces the tenant's transport in a slot. An omitted password keeps the stored one
 * (clients cannot read it back to resend it); null removes it.
 */
export async function putEmailTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  input: EmailTransportRequest,
  slot: EmailTransportSlot = 'primary',
): Promise<EmailTransportResponse> {
  const refusal = await smtpHostRefusal(runtime, input.host);
  if (refusal) throw invalidField(['body', 'host'], refusal, 'host_not_allowed');
  const ciphertext = input.password
    ? runtime.keyRing.encrypt(input.password, emailTransportPasswordAad(tenantId, slot))
    : null;
  const keepPassword = input.password === undefined;
  if (keepPassword) {
    // The stored password stays bound to the server it was given for: pointing the transport elsewhere
    // (or dropping TLS) without resending it would hand it to that server at the next send.
    const stored = await queryOne<{
      host: string;
      port: number;
      secure: boolean;
      username: string | null;
      has_password: boolean;
    }>(em, STORED_SERVER, [tenantId, slot]);
    const moved =
      stored &&
      (stored.host !== input.host ||
        stored.port !== input.port ||
        stored.secure !== input.secure ||
        stored.username !== (input.username ?? null));
    if (stored?.has_password && moved) {
      throw invalidField(['body', 'password'], 'required when host, port, secure or username change', 'missing');
    }
  }
  await execute(em, PUT_TRANSPORT, [
    tenantId,
    input.host,
    input.port,
    input.secure,
    input.username ?? null,
    ciphertext,
    input.from_email,
    input.from_name ?? null,
    keepPassword,
    slot,
  ]);
  return getEmailTransport(runtime, em, tenantId, slot);
}

export async function deleteEmailTransport(
  em: EntityManager,
  tenantId: string,
  slot: EmailTransportSlot = 'primary',
): Promise<void> {
  await execute(em, DELETE_TRANSPORT, [tenantId, slot]);
}

/**
 * Sends a test email the way the tenant's email goes: through its own transport, else through the
 * install's default SMTP, and reports the SMTP server's answer.
 */
export async function testEmailTransport(
  runtime: ChannelContext,
  em: EntityManager,
  tenantId: string,
  to: string,
): Promise<SendTestEmailResult> {
  const loaded = await loadEmailTransport(runtime, em, tenantId);
  if (!loaded) {
    const viaDefault = await sendThroughInstallSmtp(
      runtime,
      em,
      to,
      "the install's default SMTP works for this tenant",
    );
    if (viaDefault) return viaDefault;
    throw new AppError(
      'not_configured',
      'No email transport is configured for this tenant, and the install has no default SMTP: its email is skipped (no_transport)',
    );
  }
  const transport = 'tenant';
  if (loaded.state === 'unreadable') {
    return {
      ok: false,
      transport,
      error:
        'credentials_unreadable: the password was encrypted with a key that is no longer in the key ring; set it again',
    };
  }
  // The host is checked as the connection opens, as for every send (a refusal is the test's error).
  return {
    ...(await sendTestEmail(
      runtime,
      loaded.settings,
      formatFrom(loaded.fromEmail, loaded.fromName),
      to,
      'your email transport works',
    )),
    transport,
  };
}

/** Sends the test email and reports the SMTP server's answer. */
async function sendTestEmail(
  runtime: ChannelContext,
  settings: SmtpSettings,
  from: string,
  to: string,
  works: string,
): Promise<Omit<SendTestEmailResult, 'transport'>> {
  const outcome = await deliverEmail(runtime, settings, {
    from,
    to,
    subject: 'Herald test email',
    text: `This is a test email from Herald: ${works}.`,
    html: `<p>This is a test email from Herald: ${works}.</p>`,
  });
  if (outcome.status === 'sent') return { ok: true, message_id: outcome.messageId };
  return { ok: false, error: outcome.status === 'failed' ? outcome.error : outcome.reason };
}

export interface DefaultSmtpInput extends SmtpSettings {
  from?: string | null;
}

/** Stores the install's default SMTP (used by tenants without their own transport and system emails). */
export async function setDefaultSmtp(runtime: Context, em: EntityManager, input: DefaultSmtpInput): Promise<void> {
  const value = JSON.stringify({
    host: input.host,
    port: input.port,
    secure: input.secure,
    username: input.username ?? null,
    password: input.password ?? null,
    ...(input.from ? { from: input.from } : {}),
  });
  await storeInstallSecret(
    em,
    DEFAULT_SMTP_SECRET,
    runtime.keyRing.encrypt(value, installSecretAad(DEFAULT_SMTP_SECRET)),
  );
}

/** The stored default SMTP without its password, for display. */
export async function describeDefaultSmtp(
  runtime: Context,
  em: EntityManager,
): Promise<{
  source: 'config' | 'stored' | 'none';
  host?: string;
  port?: number;
  secure?: boolean;
  username?: string | null;
  from?: string;
  credentials_unreadable?: boolean;
}> {
  if (runtime.config.smtpUrl) {
    const { host, port, secure, username } = smtpSettingsFromUrl(runtime.config.smtpUrl);
    return { source: 'config', host, port, secure, username, from: runtime.config.mailFrom };
  }
  const ciphertext = await readInstallSecret(em, DEFAULT_SMTP_SECRET);
  if (!ciphertext) return { source: 'none' };
  try {
    const stored = JSON.parse(
      runtime.keyRing.decrypt(ciphertext, installSecretAad(DEFAULT_SMTP_SECRET)),
    ) as DefaultSmtpInput;
    return {
      source: 'stored',
      host: stored.host,
      port: stored.port,
      secure: stored.secure,
      username: stored.username ?? null,
      from: stored.from ?? runtime.config.mailFrom,
    };
  } catch (error) {
    if (isUnreadable(error)) return { source: 'stored', credentials_unreadable: true };
    throw error;
  }
}

/** The install's default SMTP as a tenant's transport shows it: no credentials, no user name; null when there is none. */
async function installDefaultOf(runtime: Context, em: EntityManager): Promise<InstallDefaultSmtp | null> {
  const { source, host, port, secure, from, credentials_unreadable } = await describeDefaultSmtp(runtime, em);
  if (source === 'none') return null;
  return { host, port, secure, from, credentials_unreadable: credentials_unreadable ?? false };
}

export async function removeDefaultSmtp(em: EntityManager): Promise<boolean> {
  return deleteInstallSecret(em, DEFAULT_SMTP_SECRET);
}

/**
 * Sends a test email through the install's own SMTP (config.smtpUrl, else the stored default): the
 * server that sends system emails and the mail of tenants without a transport of their own.
 */
export async function testInstallSmtp(
  runtime: ChannelContext,
  em: EntityManager,
  to: string,
): Promise<SendTestEmailResult> {
  const result = await sendThroughInstallSmtp(runtime, em, to, "the install's own SMTP works");
  if (!result)
    throw new AppError(
      'not_configured',
      'The install has no SMTP: set smtpUrl (herald init --smtp-url) or herald transports email set-default',
    );
  return result;
}

/** The test email through the install's own SMTP; null when the install has none. */
async function sendThroughInstallSmtp(
  runtime: ChannelContext,
  em: EntityManager,
  to: string,
  works: string,
): Promise<SendTestEmailResult | null> {
  const transport = 'install_default';
  let install;
  try {
    install = await installSmtp(runtime, em);
  } catch (error) {
    if (isUnreadable(error))
      return {
        ok: false,
        transport,
        error:
          'credentials_unreadable: the stored default SMTP was encrypted with a key that is no longer in the key ring; set it again',
      };
    throw error;
  }
  if (!install) return null;
  return { ...(await sendTestEmail(runtime, install.settings, install.from, to, works)), transport };
}

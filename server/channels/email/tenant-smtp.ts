// A tenant's own SMTP transports as stored (a primary, and a fallback relay for when the primary fails
// for now): each row, with the password decrypted for sending, and the rule on which hosts a tenant
// may point them at: public ones (unless allowPrivateSmtpHosts), checked when a transport is set and,
// through the SSRF guard, as each connection to it opens. Read by the sender (transport.ts, through
// relays.ts) and by the service that manages transports (email-transport.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import { emailTransportPasswordAad } from '../../base/crypto/aad.ts';
import { isUnreadable } from '../../base/crypto/keyring.ts';
import { query, queryOne } from '../../base/db/sql.ts';
import { hostRefusal, type GuardOptions } from '../../base/net/public-address.ts';
import { allowsPrivate } from '../../base/net/allow-private.ts';
import type { Context } from '../../base/context.ts';
import type { SmtpSettings } from './smtp.ts';

/** The primary is the spec's /v1/email-transport; the fallback is asked when it fails for now. */
export type EmailTransportSlot = 'primary' | 'fallback';

export interface EmailTransportRow {
  tenant_id: string;
  slot: EmailTransportSlot;
  host: string;
  port: number;
  secure: boolean;
  username: string | null;
  password_ciphertext: string | null;
  from_email: string;
  from_name: string | null;
}

export type LoadedEmailTransport =
  | { state: 'ready'; row: EmailTransportRow; settings: SmtpSettings; fromEmail: string; fromName: string | null }
  | { state: 'unreadable'; row: EmailTransportRow };

const TRANSPORT_COLUMNS = `tenant_id, slot, host, port, secure, username, password_ciphertext, from_email, from_name`;
const FIND_TRANSPORT = `SELECT ${TRANSPORT_COLUMNS} FROM email_transports WHERE tenant_id = $1 AND slot = $2`;
const FIND_TRANSPORTS = `SELECT ${TRANSPORT_COLUMNS} FROM email_transports WHERE tenant_id = $1`;

/** The tenant's transport in one slot with its password decrypted; null when the tenant has none there. */
export async function loadEmailTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  slot: EmailTransportSlot = 'primary',
): Promise<LoadedEmailTransport | null> {
  const row = await queryOne<EmailTransportRow>(em, FIND_TRANSPORT, [tenantId, slot]);
  return row ? loaded(runtime, row) : null;
}

export interface LoadedEmailTransports {
  primary: LoadedEmailTransport | null;
  fallback: LoadedEmailTransport | null;
}

/** Both of the tenant's transports in one statement (a send asks for both). */
export async function loadEmailTransports(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
): Promise<LoadedEmailTransports> {
  const rows = await query<EmailTransportRow>(em, FIND_TRANSPORTS, [tenantId]);
  const inSlot = (slot: EmailTransportSlot) => {
    const row = rows.find((r) => r.slot === slot);
    return row ? loaded(runtime, row) : null;
  };
  return { primary: inSlot('primary'), fallback: inSlot('fallback') };
}

function loaded(runtime: Context, row: EmailTransportRow): LoadedEmailTransport {
  let password: string | null = null;
  if (row.password_ciphertext) {
    try {
      password = runtime.keyRing.decrypt(row.password_ciphertext, emailTransportPasswordAad(row.tenant_id, row.slot));
    } catch (error) {
      if (isUnreadable(error)) return { state: 'unreadable', row };
      throw error;
    }
  }
  return {
    state: 'ready',
    row,
    settings: {
      host: row.host,
      port: row.port,
      secure: row.secure,
      username: row.username,
      password,
      guard: smtpGuard(runtime),
    },
    fromEmail: row.from_email,
    fromName: row.from_name,
  };
}

/** Why a tenant's SMTP host is refused: as the 422 of its `host` field says it, and as a send says it. */
export const SMTP_HOST_NOT_PUBLIC = `must resolve to a public address ${allowsPrivate('allowPrivateSmtpHosts')}`;
export const SMTP_HOST_REFUSED = `the SMTP host ${SMTP_HOST_NOT_PUBLIC}`;

/**
 * How a connection to a tenant's SMTP host is resolved and checked (smtp.ts): through dnsServers when
 * set, public addresses only unless allowPrivateSmtpHosts.
 */
function smtpGuard(runtime: Context): GuardOptions {
  return { allowPrivate: runtime.config.allowPrivateSmtpHosts, dnsServers: runtime.config.dnsServers };
}

/**
 * Why a tenant may not set this SMTP host, or null when it may: one whose every address is public (see
 * config.allowPrivateSmtpHosts). Sends check again as they connect; the install's own SMTP is trusted.
 */
export async function smtpHostRefusal(runtime: Context, host: string): Promise<string | null> {
  if (runtime.config.allowPrivateSmtpHosts) return null;
  return hostRefusal(host, { dnsServers: runtime.config.dnsServers }, SMTP_HOST_NOT_PUBLIC);
}

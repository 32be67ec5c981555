// The SMTP relays a tenant's email may go through, in the order a send asks them: the tenant's
// primary transport, or in its place the install's own SMTP; then the tenant's fallback transport,
// if it set one. The install's SMTP stands in for a missing primary, so a tenant may keep a fallback
// of its own behind the shared relay. Each relay has its own circuit: the tenant's per tenant and
// slot, the install's one for the whole install (it is one server).
import type { EntityManager } from '@mikro-orm/postgresql';
import { isUnreadable } from '../../base/crypto/keyring.ts';
import type { Context } from '../../base/context.ts';
import { installSmtp } from './install-smtp.ts';
import type { SmtpSettings } from './smtp.ts';
import type { LoadedEmailTransport, LoadedEmailTransports } from './tenant-smtp.ts';

/** The provider names deliveries and their trail show: a name, never the host or its credentials. */
export type EmailProvider = 'smtp' | 'smtp-install' | 'smtp-fallback';

export interface EmailRelay {
  provider: EmailProvider;
  circuitKey: string;
  /** null: its password (or the stored install default) cannot be decrypted with the key ring. */
  settings: SmtpSettings | null;
  /** The From address when the brand names none. */
  defaultFrom: { email: string; name: string | null };
  /**
   * The install's SMTP, shared by every tenant: a brand may claim a From address there only on one of
   * its tenant's verified sender domains.
   */
  shared: boolean;
}

export const INSTALL_SMTP_CIRCUIT = 'install:email:smtp';

/** The address part of a From header ("Herald <herald@x>" -> herald@x). */
export function addressOf(from: string): { email: string; name: string | null } {
  const match = /^\s*"?([^"<]*?)"?\s*<([^>]+)>\s*$/.exec(from);
  return match ? { email: match[2]!, name: match[1] || null } : { email: from.trim(), name: null };
}

function tenantRelay(
  tenantId: string,
  provider: 'smtp' | 'smtp-fallback',
  transport: LoadedEmailTransport,
): EmailRelay {
  const circuitKey = `${tenantId}:email:${transport.row.slot}`;
  const defaultFrom = { email: transport.row.from_email, name: transport.row.from_name };
  return {
    provider,
    circuitKey,
    settings: transport.state === 'ready' ? transport.settings : null,
    defaultFrom,
    shared: false,
  };
}

async function installRelay(runtime: Context, em: EntityManager): Promise<EmailRelay | null> {
  const shared = { provider: 'smtp-install' as const, circuitKey: INSTALL_SMTP_CIRCUIT, shared: true };
  try {
    const install = await installSmtp(runtime, em);
    if (!install) return null;
    return { ...shared, settings: install.settings, defaultFrom: addressOf(install.from) };
  } catch (error) {
    if (isUnreadable(error)) return { ...shared, settings: null, defaultFrom: { email: '', name: null } };
    throw error;
  }
}

/** The relays a tenant's email goes through, first asked first; empty when it has none. */
export async function tenantRelays(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  transports: LoadedEmailTransports,
): Promise<EmailRelay[]> {
  const first = transports.primary
    ? tenantRelay(tenantId, 'smtp', transports.primary)
    : await installRelay(runtime, em);
  const fallback = transports.fallback ? tenantRelay(tenantId, 'smtp-fallback', transports.fallback) : null;
  return [first, fallback].filter((relay): relay is EmailRelay => relay !== null);
}

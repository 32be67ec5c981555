// What the email channel adds to a tenant's email for deliverability: whether the address is
// suppressed, the one-click unsubscribe headers (RFC 8058) for types whose opt-out policy is on,
// {{ unsubscribe_url }} and {{ preferences_url }} for templates, and the VERP envelope sender
// bounce+{token}@{bounceDomain} that routes bounces back to this delivery.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../../base/db/sql.ts';
import { planEachCall } from '../../base/db/prepared.ts';
import { publicBaseUrl } from '../../base/config.ts';
import type { Context } from '../../base/context.ts';
import { bounceToken, signContactLink } from '../../base/auth/contact-links.ts';

export interface EmailLinks {
  suppressed: boolean;
  headers: Record<string, string>;
  variables: { unsubscribe_url: string; preferences_url: string };
  envelopeFrom: string | null;
}

/** The opt-out policy and suppression of each (tenant $1, type $2, address $3), in order. */
const EMAIL_FLAGS =
  planEachCall(`SELECT (SELECT t.opt_out FROM notification_types t WHERE t.tenant_id = x.tenant_id AND t.key = x.type_key) AS opt_out,
            EXISTS (SELECT 1 FROM email_suppressions s WHERE s.tenant_id = x.tenant_id AND s.email = lower(x.email)) AS suppressed
       FROM unnest($1::uuid[], $2::text[], $3::text[]) WITH ORDINALITY AS x(tenant_id, type_key, email, n)
      ORDER BY x.n`);

export function unsubscribeUrl(runtime: Context, tenantId: string, contactId: string, typeKey: string): string {
  return `${publicBaseUrl(runtime.config)}/u/${signContactLink(runtime.tokens, { kind: 'unsubscribe', tenantId, contactId, typeKey })}`;
}

export function preferencesUrl(runtime: Context, tenantId: string, contactId: string): string {
  return `${publicBaseUrl(runtime.config)}/preferences/${signContactLink(runtime.tokens, { kind: 'preferences', tenantId, contactId })}`;
}

/** What the database says about an email before it is sent: the type's opt-out policy, and whether the address is suppressed. */
export interface EmailFlags {
  optOut: boolean;
  suppressed: boolean;
}

export interface EmailFlagsKey {
  tenantId: string;
  typeKey: string;
  to: string;
}

/** The flags of each (tenant, type, address), in order, in one statement however many. */
export async function emailFlagsOf(em: EntityManager, keys: EmailFlagsKey[]): Promise<EmailFlags[]> {
  if (keys.length === 0) return [];
  const rows = await query<{ opt_out: boolean | null; suppressed: boolean }>(em, EMAIL_FLAGS, [
    keys.map((k) => k.tenantId),
    keys.map((k) => k.typeKey),
    keys.map((k) => k.to),
  ]);
  return rows.map((row) => ({ optOut: row.opt_out === true, suppressed: row.suppressed }));
}

export function emailLinksFor(
  runtime: Context,
  delivery: { id: string; tenantId: string; contactId: string; typeKey: string },
  flags: EmailFlags,
): EmailLinks {
  const unsubscribe = unsubscribeUrl(runtime, delivery.tenantId, delivery.contactId, delivery.typeKey);
  const headers: Record<string, string> = flags.optOut
    ? { 'List-Unsubscribe': `<${unsubscribe}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' }
    : {};
  const domain = runtime.config.bounceDomain;
  return {
    suppressed: flags.suppressed,
    headers,
    variables: {
      unsubscribe_url: unsubscribe,
      preferences_url: preferencesUrl(runtime, delivery.tenantId, delivery.contactId),
    },
    envelopeFrom: domain ? `bounce+${bounceToken(runtime.tokens, delivery.id)}@${domain}` : null,
  };
}

// What the email channel adds to a tenant's email for deliverability: whether the address is
// suppressed, the one-click unsubscribe headers (RFC 8058) for types whose opt-out policy is on,
// {{ unsubscribe_url }} and {{ preferences_url }} for templates, and the VERP envelope sender
// bounce+{token}@{bounceDomain} that routes bounces back to this delivery.
import type { EntityManager } from '@mikro-orm/postgresql';
import { queryOne } from '../db/sql.ts';
import { publicBaseUrl } from '../config.ts';
import type { Runtime } from '../runtime.ts';
import { bounceToken, signContactLink } from '../auth/contact-links.ts';

export interface EmailLinks {
  suppressed: boolean;
  headers: Record<string, string>;
  variables: { unsubscribe_url: string; preferences_url: string };
  envelopeFrom: string | null;
}

export function unsubscribeUrl(runtime: Runtime, tenantId: string, contactId: string, typeKey: string): string {
  return `${publicBaseUrl(runtime.config)}/u/${signContactLink(runtime.tokens, { kind: 'unsubscribe', tenantId, contactId, typeKey })}`;
}

export function preferencesUrl(runtime: Runtime, tenantId: string, contactId: string): string {
  return `${publicBaseUrl(runtime.config)}/preferences/${signContactLink(runtime.tokens, { kind: 'preferences', tenantId, contactId })}`;
}

export async function emailLinksFor(
  runtime: Runtime,
  em: EntityManager,
  delivery: { id: string; tenantId: string; contactId: string; typeKey: string; to: string },
): Promise<EmailLinks> {
  const row = await queryOne<{ opt_out: boolean | null; suppressed: boolean }>(
    em,
    `SELECT (SELECT opt_out FROM notification_types WHERE tenant_id = $1 AND key = $2) AS opt_out,
            EXISTS (SELECT 1 FROM email_suppressions WHERE tenant_id = $1 AND email = lower($3)) AS suppressed`,
    [delivery.tenantId, delivery.typeKey, delivery.to],
  );
  const unsubscribe = unsubscribeUrl(runtime, delivery.tenantId, delivery.contactId, delivery.typeKey);
  const headers: Record<string, string> = row?.opt_out
    ? { 'List-Unsubscribe': `<${unsubscribe}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' }
    : {};
  const domain = runtime.config.bounceDomain;
  return {
    suppressed: row?.suppressed === true,
    headers,
    variables: { unsubscribe_url: unsubscribe, preferences_url: preferencesUrl(runtime, delivery.tenantId, delivery.contactId) },
    envelopeFrom: domain ? `bounce+${bounceToken(runtime.tokens, delivery.id)}@${domain}` : null,
  };
}

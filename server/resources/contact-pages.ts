// The pages a contact reaches from an email, by a signed link and without signing in: one-click
// unsubscribe (/u/{token}: GET shows a button and changes nothing, POST opts the contact out of the
// type's email channel) and the preference page (/preferences/{token}: the same matrix the API
// shows, changed with a plain form POST). Plain HTML, no script; one stylesheet allowed by its hash.
import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { queryOne } from '../base/db/sql.ts';
import type { Context } from '../base/context.ts';
import { verifyContactLink, type ContactLink } from '../base/auth/contact-links.ts';
import { preferenceMatrix, setPreference } from './preferences.ts';
import type { PreferenceEntry } from '../schemas/preferences.ts';

const STYLE = `body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;width:100%}th,td{padding:.4rem;border-bottom:1px solid #ddd;text-align:left}
button{font-size:1rem;padding:.5rem 1.2rem;margin-top:1rem}.note{color:#555}.done{color:#17603a}`;
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

/** No script at all; the one inline stylesheet by hash; forms post only to Herald itself. */
export const CONTACT_PAGE_CSP = `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`;

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const LINK_TARGET = `SELECT c.email, t.name AS type_name, t.key IS NOT NULL AS type_live
       FROM contacts c
       LEFT JOIN notification_types t ON t.tenant_id = c.tenant_id AND t.key = $3 AND t.deleted_at IS NULL
      WHERE c.id = $1 AND c.tenant_id = $2`;

function page(status: number, title: string, body: string): Response {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
  return new Response(html, {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': CONTACT_PAGE_CSP,
      'cache-control': 'no-store',
    },
  });
}

export function invalidLinkPage(): Response {
  return page(404, 'Link not valid', `<p>This link is not valid. Use the link from your most recent email.</p>`);
}

interface LinkTarget {
  link: ContactLink;
  email: string | null;
  typeName: string | null;
}

/** The contact (and type) a token names, when the token is genuine and they still exist. */
export async function resolveContactLink(
  runtime: Context,
  em: EntityManager,
  token: string,
  kind: ContactLink['kind'],
): Promise<LinkTarget | null> {
  const link = verifyContactLink(runtime.tokens, token);
  if (!link || link.kind !== kind) return null;
  const row = await queryOne<{ email: string | null; type_name: string | null; type_live: boolean }>(em, LINK_TARGET, [
    link.contactId,
    link.tenantId,
    link.kind === 'unsubscribe' ? link.typeKey : null,
  ]);
  if (!row || (link.kind === 'unsubscribe' && !row.type_live)) return null;
  return { link, email: row.email, typeName: row.type_name };
}

export function unsubscribeConfirmPage(target: LinkTarget): Response {
  return page(
    200,
    'Unsubscribe',
    `<p>Stop emails about <strong>${escapeHtml(target.typeName ?? '')}</strong>${target.email ? ` to ${escapeHtml(target.email)}` : ''}?</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`,
  );
}

/** Opts the contact out of the type's email channel (idempotent). */
export async function applyOneClickUnsubscribe(em: EntityManager, target: LinkTarget): Promise<Response> {
  const link = target.link as Extract<ContactLink, { kind: 'unsubscribe' }>;
  await setPreference(
    em,
    link.tenantId,
    link.contactId,
    { type: link.typeKey, channel: 'email', enabled: false },
    'one_click',
  );
  return page(
    200,
    'Unsubscribed',
    `<p class="done">You will no longer receive emails about <strong>${escapeHtml(target.typeName ?? '')}</strong>.</p>`,
  );
}

const fieldName = (entry: PreferenceEntry) => `${entry.type}:${entry.channel}`;

export async function preferencePage(em: EntityManager, target: LinkTarget, saved = false): Promise<Response> {
  const { tenantId, contactId } = target.link;
  const matrix = await preferenceMatrix(em, tenantId, contactId);
  const types = [...new Set(matrix.map((e) => e.type))];
  const channels = [...new Set(matrix.map((e) => e.channel))];
  const rows = types
    .map((type) => {
      const cells = channels.map((channel) => {
        const entry = matrix.find((e) => e.type === type && e.channel === channel)!;
        const id = escapeHtml(fieldName(entry));
        return `<td><input type="checkbox" id="${id}" name="${id}" aria-label="${escapeHtml(`${type} ${channel}`)}"${entry.enabled ? ' checked' : ''}${entry.opt_out ? '' : ' disabled'}></td>`;
      });
      return `<tr><th scope="row">${escapeHtml(type)}</th>${cells.join('')}</tr>`;
    })
    .join('\n');
  const body = `${saved ? '<p class="done" role="status">Your preferences are saved.</p>' : ''}
<p class="note">Choose what you receive${target.email ? ` at ${escapeHtml(target.email)}` : ''}. Greyed-out boxes cannot be changed.</p>
<form method="post"><input type="hidden" name="save" value="1">
<table><thead><tr><th>Notification</th>${channels.map((c) => `<th scope="col">${escapeHtml(c)}</th>`).join('')}</tr></thead>
<tbody>${rows}</tbody></table><button type="submit">Save</button></form>`;
  return page(200, 'Notification preferences', body);
}

/** Applies the form: every changeable box of the matrix is on exactly when it was ticked. */
export async function savePreferencePage(
  em: EntityManager,
  target: LinkTarget,
  form: URLSearchParams,
): Promise<Response> {
  const { tenantId, contactId } = target.link;
  const matrix = await preferenceMatrix(em, tenantId, contactId);
  for (const entry of matrix) {
    if (!entry.opt_out) continue;
    const enabled = form.has(fieldName(entry));
    if (enabled !== entry.enabled)
      await setPreference(
        em,
        tenantId,
        contactId,
        { type: entry.type, channel: entry.channel, enabled },
        'preference_page',
      );
  }
  return preferencePage(em, target, true);
}

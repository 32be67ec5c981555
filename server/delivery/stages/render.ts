// The render stage: which template fills a delivery, and the context it renders with. The template
// is found from what the load stage read (the event's brand, or the tenant's default when none was
// named or it has been deleted since; the contact's language; the fallback chain of resolve.ts), once
// per distinct (kind, tenant, type, candidates) of a run: a batch is mostly one type for one brand.
import type { EntityManager } from '@mikro-orm/postgresql';
import { KeyUnavailableError } from '../../crypto/keyring.ts';
import type { Runtime } from '../../runtime.ts';
import type { ContactRow } from '../../db/contacts.ts';
import { MUTABLE_CONTACT_FIELDS } from '../../schemas/contacts.ts';
import { secretVariablesAad } from '../../crypto/aad.ts';
import { findTemplate, renderContext, templateCandidates, type BrandRow, type EmailTemplateRow, type InboxTemplateRow, type TemplateKind } from '../../templates/resolve.ts';
import { renderInbox, type RenderedInbox } from '../../templates/render.ts';
import { referencedVariables, renderString } from '../../templates/engine.ts';
import type { EventForDelivery } from '../channels/types.ts';

/** Templates found during one run, by what was asked. */
export type TemplateCache = Map<string, Promise<EmailTemplateRow | InboxTemplateRow | null>>;

export function newTemplateCache(): TemplateCache {
  return new Map();
}

export interface ResolvedTemplate<T> {
  template: T;
  brand: BrandRow;
}

export async function deliveryTemplate<K extends TemplateKind>(
  em: EntityManager,
  kind: K,
  event: EventForDelivery,
  contact: Pick<ContactRow, 'language'>,
  cache: TemplateCache,
): Promise<ResolvedTemplate<K extends 'email' ? EmailTemplateRow : InboxTemplateRow> | null> {
  const brand = event.brand;
  if (!brand) return null;
  const candidates = templateCandidates(brand.key, event.default_brand_key, contact.language, event.default_language);
  const key = JSON.stringify([kind, event.tenant_id, event.type_key, candidates]);
  let found = cache.get(key);
  if (!found) {
    found = findTemplate(em, kind, { tenantId: event.tenant_id, typeKey: event.type_key, ...candidates });
    cache.set(key, found);
  }
  const template = await found;
  return template ? { template: template as never, brand } : null;
}

/** The render context of a delivery: brand values, then the variables (secret ones included), plus the contact. */
export function deliveryContext(brand: BrandRow, variables: Record<string, unknown>, contact: ContactRow): Record<string, unknown> {
  return renderContext(brand, variables, contactContext(contact));
}

/** What templates and workflow conditions see of the contact: its id, external id, fields and time zone. */
export function contactContext(contact: ContactRow): Record<string, unknown> {
  const context: Record<string, unknown> = { id: contact.id, external_id: contact.external_id, timezone: contact.timezone };
  for (const field of MUTABLE_CONTACT_FIELDS) context[field] = contact[field];
  return context;
}

/**
 * The inbox template rendered for a delivery (inbox items, and the text of push messages); null: no
 * template. Within a run (one `cache`), each of its strings is rendered once per distinct values of
 * what it reads: the recipients of a trigger or a broadcast mostly get the same title, unless it
 * names them.
 */
export async function renderInboxDelivery(
  em: EntityManager,
  event: EventForDelivery,
  contact: ContactRow,
  variables: Record<string, unknown>,
  cache: TemplateCache,
): Promise<RenderedInbox | null> {
  const resolved = await deliveryTemplate(em, 'inbox', event, contact, cache);
  if (!resolved) return null;
  const context = deliveryContext(resolved.brand, variables, contact);
  let rendered = renderedByRun.get(cache);
  if (!rendered) renderedByRun.set(cache, (rendered = new Map()));
  // Throws UnfilledSlotError or TemplateError: a final failure naming the slot (the run records it).
  return renderInbox(resolved.template, context, (source) => renderTextOnce(rendered, source, context));
}

/** A run's renderings: by source, then by the values of the names the source reads. */
type Renderings = Map<string, { reads: string[] | null; texts: Map<string, string> }>;

const renderedByRun = new WeakMap<TemplateCache, Renderings>();

function renderTextOnce(rendered: Renderings, source: string, context: Record<string, unknown>): string {
  let entry = rendered.get(source);
  if (!entry) rendered.set(source, (entry = { reads: textReads(source), texts: new Map() }));
  if (!entry.reads) return renderString(source, context, 'text');
  // A name the context lacks ([]) is told apart from one it holds as null ([null]): only the first
  // leaves a slot unfilled. Own properties only, as the engine reads them ("constructor" is no variable).
  const key = JSON.stringify(entry.reads.map((name) => (Object.hasOwn(context, name) ? [context[name]] : [])));
  let text = entry.texts.get(key);
  if (text === undefined) {
    text = renderString(source, context, 'text');
    entry.texts.set(key, text);
  }
  return text;
}

/**
 * The top-level names a template string reads from its context; null when it may read others too:
 * a bracket lookup (`{{ [name] }}`, `{{ items[i] }}`) can name what it reads with a value.
 */
function textReads(source: string): string[] | null {
  return source.includes('[') ? null : referencedVariables(source);
}

/** The variables to render with: the public ones plus the decrypted secret ones (never logged, never stored). */
export function readVariables(
  runtime: Runtime,
  event: { id: string; variables: Record<string, unknown>; secret_variables_ciphertext: string | null },
): { values: Record<string, unknown> } | { error: string } {
  if (!event.secret_variables_ciphertext) return { values: event.variables };
  try {
    const secrets = JSON.parse(runtime.keyRing.decrypt(event.secret_variables_ciphertext, secretVariablesAad(event.id))) as Record<string, unknown>;
    return { values: { ...event.variables, ...secrets } };
  } catch (error) {
    return {
      error:
        error instanceof KeyUnavailableError
          ? 'secret variables are unreadable: their encryption key is no longer in the key ring'
          : 'secret variables could not be decrypted',
    };
  }
}

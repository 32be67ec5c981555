// Which template fills a (type, brand, language) request, and with which brand's values it renders.
// Fallback chain: brand + contact language -> brand + tenant default language ->
// default brand + contact language -> default brand + default language. A regional language
// ("de-AT") also tries its primary subtag ("de") before the tenant default.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query, queryOne } from '../base/db/sql.ts';
import type { JsonValue } from '../schemas/common.ts';

export type TemplateKind = 'email' | 'inbox' | 'sms' | 'chat' | 'http';

export interface BrandRow {
  id: string;
  key: string;
  values: Record<string, unknown>;
  sender: { from_name?: string | null; from_email?: string | null; reply_to?: string | null };
  is_default: boolean;
}

export interface EmailTemplateRow {
  id: string;
  notification_type_key: string;
  brand_key: string;
  language: string;
  subject: string;
  content: string;
}

export interface InboxTemplateRow {
  id: string;
  notification_type_key: string;
  brand_key: string;
  language: string;
  title: string;
  content: string;
  action_url: string | null;
}

export interface SmsTemplateRow {
  id: string;
  notification_type_key: string;
  brand_key: string;
  language: string;
  content: string;
}

/** Provider-native message blocks: JSON whose string leaves are templates. */
export interface ChatBlocks {
  slack?: JsonValue;
  teams?: JsonValue;
  discord?: JsonValue;
}

export interface ChatTemplateRow {
  id: string;
  notification_type_key: string;
  brand_key: string;
  language: string;
  /** Markdown (the subset every chat provider renders) with placeholders. */
  content: string;
  blocks: ChatBlocks | null;
}

export interface HttpTemplateRow {
  id: string;
  notification_type_key: string;
  brand_key: string;
  language: string;
  /** A JSON value whose string leaves are templates (server/channels/render.ts, renderJsonTemplate). */
  body: JsonValue;
}

/** The row of each template kind. */
export interface TemplateRows {
  email: EmailTemplateRow;
  inbox: InboxTemplateRow;
  sms: SmsTemplateRow;
  chat: ChatTemplateRow;
  http: HttpTemplateRow;
}

export interface Resolved<T> {
  template: T;
  /** The brand whose values render the template: the requested brand when it exists, else the default. */
  brand: BrandRow;
}

const TABLE = {
  email: 'email_templates',
  inbox: 'inbox_templates',
  sms: 'sms_templates',
  chat: 'chat_templates',
  http: 'http_templates',
} as const;
const COLUMNS = {
  email: 'id, notification_type_key, brand_key, language, subject, content',
  inbox: 'id, notification_type_key, brand_key, language, title, content, action_url',
  sms: 'id, notification_type_key, brand_key, language, content',
  chat: 'id, notification_type_key, brand_key, language, content, blocks',
  http: 'id, notification_type_key, brand_key, language, body',
} as const;

const BRAND_BY_KEY = `SELECT id, key, "values", sender, is_default FROM brands WHERE tenant_id = $1 AND key = $2`;
const DEFAULT_BRAND = `SELECT id, key, "values", sender, is_default FROM brands WHERE tenant_id = $1 AND is_default`;
const TENANT_LANGUAGE = `SELECT default_language FROM tenants WHERE id = $1`;

/** The best template of a kind: $3 the brand keys and $4 the languages, best first. */
function findTemplateSql(kind: TemplateKind): string {
  return `SELECT ${COLUMNS[kind]} FROM ${TABLE[kind]}
      WHERE tenant_id = $1 AND notification_type_key = $2 AND brand_key = ANY($3::text[]) AND language = ANY($4::text[])
      ORDER BY array_position($3::text[], brand_key), array_position($4::text[], language)
      LIMIT 1`;
}

export function languageCandidates(language: string | null | undefined, tenantDefault: string): string[] {
  const out: string[] = [];
  const add = (l: string | null | undefined) => {
    if (l && !out.includes(l)) out.push(l);
  };
  add(language);
  add(language?.split('-')[0]);
  add(tenantDefault);
  return out;
}

/**
 * The template fallback chain as candidate lists, best first: the brand, then the default brand; for
 * each, the contact's language, its base language, then the tenant's default language.
 */
export function templateCandidates(
  brandKey: string,
  defaultBrandKey: string | null | undefined,
  language: string | null | undefined,
  tenantDefaultLanguage: string,
): { brandKeys: string[]; languages: string[] } {
  return {
    brandKeys: [...new Set([brandKey, defaultBrandKey].filter((k): k is string => Boolean(k)))],
    languages: languageCandidates(language, tenantDefaultLanguage),
  };
}

/** The brand a request names (or the tenant's default brand when none is named); undefined if it does not exist. */
export async function findBrand(
  em: EntityManager,
  tenantId: string,
  brandKey: string | null | undefined,
): Promise<BrandRow | undefined> {
  return brandKey
    ? queryOne<BrandRow>(em, BRAND_BY_KEY, [tenantId, brandKey])
    : queryOne<BrandRow>(em, DEFAULT_BRAND, [tenantId]);
}

export async function resolveTemplate<K extends TemplateKind>(
  em: EntityManager,
  kind: K,
  request: { tenantId: string; typeKey: string; brand: BrandRow; language?: string | null },
): Promise<Resolved<TemplateRows[K]> | null> {
  const tenant = await queryOne<{ default_language: string }>(em, TENANT_LANGUAGE, [request.tenantId]);
  const defaultBrand = request.brand.is_default ? request.brand : await findBrand(em, request.tenantId, null);
  const template = await findTemplate(em, kind, {
    tenantId: request.tenantId,
    typeKey: request.typeKey,
    ...templateCandidates(request.brand.key, defaultBrand?.key, request.language, tenant?.default_language ?? 'en'),
  });
  return template ? { template, brand: request.brand } : null;
}

/** The best template among the candidates, ranked by (brand preference, language preference), in one query. */
export async function findTemplate<K extends TemplateKind>(
  em: EntityManager,
  kind: K,
  candidates: { tenantId: string; typeKey: string; brandKeys: string[]; languages: string[] },
): Promise<TemplateRows[K] | null> {
  const rows = await query<Record<string, unknown>>(em, findTemplateSql(kind), [
    candidates.tenantId,
    candidates.typeKey,
    candidates.brandKeys,
    candidates.languages,
  ]);
  return (rows[0] as never) ?? null;
}

/**
 * The render context: brand values, then the event's variables over them, plus `brand` and `contact`.
 * A contact field without a value (null) is left out, so that `{{ contact.name }}` for a contact
 * without a name is an unfilled slot, as a missing variable is, and never an empty string.
 */
export function renderContext(
  brand: BrandRow | null,
  variables: Record<string, unknown>,
  contact: Record<string, unknown> | null,
): Record<string, unknown> {
  const values = brand?.values ?? {};
  return { ...values, ...variables, brand: values, contact: contact ? presentFields(contact) : {} };
}

function presentFields(contact: Record<string, unknown>): Record<string, unknown> {
  const present: Record<string, unknown> = {};
  for (const field in contact)
    if (contact[field] !== null && contact[field] !== undefined) present[field] = contact[field];
  return present;
}

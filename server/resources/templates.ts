// Templates of every kind (email, inbox, sms, chat, http) share one life cycle: a template fills a
// slot (notification type + brand + language, unique per tenant), its type must be live when it is
// written into a slot, its brand must exist, and every field must parse as a template (every string
// leaf of a JSON field: chat blocks, the http body). Write order of checks: 404, then 422, then 409.
// Defaults: the tenant's default brand and the tenant's default language.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, ValidationFailure, notFound, type ValidationIssue } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { execute, isUniqueViolation, query, queryOne } from '../base/db/sql.ts';
import { templateSyntaxError } from '../base/template-engine.ts';
import type { TemplateKind } from '../channels/resolve.ts';
import type {
  ChatTemplateResponse,
  EmailTemplateResponse,
  HttpTemplateResponse,
  InboxTemplateResponse,
  SmsTemplateResponse,
  TemplateListQuery,
} from '../schemas/templates.ts';
import { findType } from './notification-types.ts';
import { toIsoTimestamp } from '../base/timestamps.ts';

export type { TemplateKind };

interface KindSpec {
  table: string;
  noun: string;
  /** The kind's own fields (besides the slot), each parsed as a template on write. */
  fields: readonly string[];
  /** Those of its fields stored as jsonb: JSON whose string leaves are templates. */
  jsonFields?: readonly string[];
}

const KINDS: Record<TemplateKind, KindSpec> = {
  email: { table: 'email_templates', noun: 'Email template', fields: ['subject', 'content'] },
  inbox: { table: 'inbox_templates', noun: 'Inbox template', fields: ['title', 'content', 'action_url'] },
  sms: { table: 'sms_templates', noun: 'SMS template', fields: ['content'] },
  chat: { table: 'chat_templates', noun: 'Chat template', fields: ['content', 'blocks'], jsonFields: ['blocks'] },
  http: { table: 'http_templates', noun: 'HTTP template', fields: ['body'], jsonFields: ['body'] },
};

interface TemplateResponses {
  email: EmailTemplateResponse;
  inbox: InboxTemplateResponse;
  sms: SmsTemplateResponse;
  chat: ChatTemplateResponse;
  http: HttpTemplateResponse;
}

type ResponseOf<K extends TemplateKind> = TemplateResponses[K];

interface TemplateRow {
  id: string;
  notification_type_key: string;
  brand_key: string;
  language: string;
  created_at: Date | string;
  updated_at: Date | string;
  [field: string]: unknown;
}

interface SlotInput {
  notification_type_key?: string;
  brand_key?: string;
  language?: string;
}

function columnsSql(kind: TemplateKind): string {
  return [
    'id',
    'notification_type_key',
    'brand_key',
    'language',
    ...KINDS[kind].fields,
    'created_at',
    'updated_at',
  ].join(', ');
}

const SHARE_LOCK_BRAND = `SELECT 1 FROM brands WHERE tenant_id = $1 AND key = $2 FOR SHARE`;
const DEFAULT_SLOT = `SELECT b.key AS brand_key, t.default_language AS language
  FROM tenants t JOIN brands b ON b.tenant_id = t.id AND b.is_default WHERE t.id = $1`;

/** `valueCount`: the id, tenant, slot and the kind's fields, bound in that order. */
function insertTemplateSql(kind: TemplateKind, valueCount: number): string {
  const spec = KINDS[kind];
  return `INSERT INTO ${spec.table}
       (id, tenant_id, notification_type_key, brand_key, language, ${spec.fields.join(', ')})
       VALUES (${Array.from({ length: valueCount }, (_, i) => `$${i + 1}`).join(', ')})
       ON CONFLICT (tenant_id, notification_type_key, brand_key, language) DO NOTHING
       RETURNING ${columnsSql(kind)}`;
}

function listTemplatesSql(kind: TemplateKind): string {
  return `SELECT ${columnsSql(kind)} FROM ${KINDS[kind].table}
      WHERE tenant_id = $1 AND ($2::text IS NULL OR notification_type_key = $2)
        AND ($3::text IS NULL OR brand_key = $3) AND ($4::text IS NULL OR language = $4)
      ORDER BY notification_type_key, brand_key, language`;
}

function getTemplateSql(kind: TemplateKind): string {
  return `SELECT ${columnsSql(kind)} FROM ${KINDS[kind].table} WHERE id = $1 AND tenant_id = $2`;
}

function lockTemplateSql(kind: TemplateKind): string {
  return `SELECT ${columnsSql(kind)} FROM ${KINDS[kind].table} WHERE id = $1 AND tenant_id = $2 FOR UPDATE`;
}

/** Sets `names` from $3 on, in their order. */
function updateTemplateSql(kind: TemplateKind, names: string[]): string {
  return `UPDATE ${KINDS[kind].table} SET ${names.map((n, i) => `${n} = $${i + 3}`).join(', ')}, updated_at = now()
          WHERE id = $1 AND tenant_id = $2 RETURNING ${columnsSql(kind)}`;
}

function deleteTemplateSql(kind: TemplateKind): string {
  return `DELETE FROM ${KINDS[kind].table} WHERE id = $1 AND tenant_id = $2`;
}

/**
 * A field's value as bound to its column: JSON fields as JSON text (node-postgres would write a
 * JavaScript array as a PostgreSQL array), null as SQL NULL.
 */
function bound(kind: TemplateKind, field: string, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  return KINDS[kind].jsonFields?.includes(field) ? JSON.stringify(value) : value;
}

function toTemplateResponse<K extends TemplateKind>(row: TemplateRow): ResponseOf<K> {
  return {
    ...row,
    created_at: toIsoTimestamp(row.created_at),
    updated_at: toIsoTimestamp(row.updated_at),
  } as unknown as ResponseOf<K>;
}

/** Checks a template slot (type live, brand present: locked against deletion until commit) and the fields' syntax. */
async function checkWrite(
  tx: EntityManager,
  tenantId: string,
  slot: { typeKey: string | null; brandKey: string | null },
  fields: Record<string, unknown>,
): Promise<void> {
  const issues: ValidationIssue[] = [];
  if (slot.typeKey !== null) {
    const type = await findType(tx, tenantId, slot.typeKey);
    if (!type)
      issues.push({
        loc: ['body', 'notification_type_key'],
        msg: `no notification type ${slot.typeKey}`,
        type: 'not_found',
      });
    else if (type.deleted_at) {
      issues.push({
        loc: ['body', 'notification_type_key'],
        msg: `notification type ${slot.typeKey} is deleted (restore it first)`,
        type: 'not_live',
      });
    }
  }
  if (slot.brandKey !== null) {
    const brand = await queryOne(tx, SHARE_LOCK_BRAND, [tenantId, slot.brandKey]);
    if (!brand) issues.push({ loc: ['body', 'brand_key'], msg: `no branding ${slot.brandKey}`, type: 'not_found' });
  }
  for (const [field, value] of Object.entries(fields)) issues.push(...syntaxIssues(value, ['body', field]));
  if (issues.length > 0) throw new ValidationFailure(issues);
}

/** A template syntax error for each string (each string leaf of a JSON field) that does not parse, located. */
function syntaxIssues(value: unknown, loc: Array<string | number>): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  // Iterative: the schemas bound the depth, and a stack of our own keeps that from mattering here.
  const stack: Array<[unknown, Array<string | number>]> = [[value, loc]];
  while (stack.length > 0) {
    const [node, at] = stack.pop()!;
    if (typeof node === 'string') {
      const error = templateSyntaxError(node);
      if (error) issues.push({ loc: at, msg: `template syntax error: ${error}`, type: 'template_syntax' });
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], [...at, i]]);
    } else if (node !== null && typeof node === 'object') {
      for (const [key, child] of Object.entries(node).reverse()) stack.push([child, [...at, key]]);
    }
  }
  return issues;
}

function slotTaken(): AppError {
  return new AppError('already_exists', 'A template for this notification type, brand and language already exists');
}

async function defaultSlot(tx: EntityManager, tenantId: string): Promise<{ brandKey: string; language: string }> {
  const row = await queryOne<{ brand_key: string; language: string }>(tx, DEFAULT_SLOT, [tenantId]);
  if (!row) throw new Error(`tenant ${tenantId} has no default brand`);
  return { brandKey: row.brand_key, language: row.language };
}

export async function createTemplate<K extends TemplateKind>(
  em: EntityManager,
  tenantId: string,
  kind: K,
  input: SlotInput & { notification_type_key: string } & Record<string, unknown>,
): Promise<ResponseOf<K>> {
  const spec = KINDS[kind];
  return em.transactional(async (tx) => {
    const defaults = await defaultSlot(tx, tenantId);
    const brandKey = input.brand_key ?? defaults.brandKey;
    const language = input.language ?? defaults.language;
    const fields = Object.fromEntries(spec.fields.map((f) => [f, input[f] ?? null]));
    await checkWrite(tx, tenantId, { typeKey: input.notification_type_key, brandKey }, fields);
    const values = [
      newId(),
      tenantId,
      input.notification_type_key,
      brandKey,
      language,
      ...spec.fields.map((f) => bound(kind, f, fields[f])),
    ];
    const row = await queryOne<TemplateRow>(tx, insertTemplateSql(kind, values.length), values);
    if (!row) throw slotTaken();
    return toTemplateResponse<K>(row);
  });
}

export async function listTemplates<K extends TemplateKind>(
  em: EntityManager,
  tenantId: string,
  kind: K,
  filter: TemplateListQuery,
): Promise<ResponseOf<K>[]> {
  const rows = await query<TemplateRow>(em, listTemplatesSql(kind), [
    tenantId,
    filter.notification_type_key ?? null,
    filter.brand_key ?? null,
    filter.language ?? null,
  ]);
  return rows.map((r) => toTemplateResponse<K>(r));
}

export async function getTemplate<K extends TemplateKind>(
  em: EntityManager,
  tenantId: string,
  kind: K,
  id: string,
): Promise<ResponseOf<K>> {
  const row = await queryOne<TemplateRow>(em, getTemplateSql(kind), [id, tenantId]);
  if (!row) throw notFound(KINDS[kind].noun);
  return toTemplateResponse<K>(row);
}

/**
 * Changes the fields given. Moving a template to another slot needs a live type and an existing
 * brand there, and a free slot (409 otherwise). Fields left out keep their values.
 */
export async function updateTemplate<K extends TemplateKind>(
  em: EntityManager,
  tenantId: string,
  kind: K,
  id: string,
  input: SlotInput & Record<string, unknown>,
): Promise<ResponseOf<K>> {
  const spec = KINDS[kind];
  return em.transactional(async (tx) => {
    const current = await queryOne<TemplateRow>(tx, lockTemplateSql(kind), [id, tenantId]);
    if (!current) throw notFound(spec.noun);
    const typeChanged =
      input.notification_type_key !== undefined && input.notification_type_key !== current.notification_type_key;
    const brandChanged = input.brand_key !== undefined && input.brand_key !== current.brand_key;
    const changedFields = Object.fromEntries(
      spec.fields.filter((f) => input[f] !== undefined).map((f) => [f, input[f]]),
    );
    await checkWrite(
      tx,
      tenantId,
      { typeKey: typeChanged ? input.notification_type_key! : null, brandKey: brandChanged ? input.brand_key! : null },
      changedFields,
    );
    const next: Record<string, unknown> = {
      notification_type_key: input.notification_type_key ?? current.notification_type_key,
      brand_key: input.brand_key ?? current.brand_key,
      language: input.language ?? current.language,
      ...Object.fromEntries(spec.fields.map((f) => [f, f in changedFields ? changedFields[f] : current[f]])),
    };
    const names = Object.keys(next);
    try {
      const row = await queryOne<TemplateRow>(tx, updateTemplateSql(kind, names), [
        id,
        tenantId,
        ...names.map((n) => bound(kind, n, next[n])),
      ]);
      return toTemplateResponse<K>(row!);
    } catch (error) {
      if (isUniqueViolation(error)) throw slotTaken();
      throw error;
    }
  });
}

export async function deleteTemplate(
  em: EntityManager,
  tenantId: string,
  kind: TemplateKind,
  id: string,
): Promise<void> {
  const changed = await execute(em, deleteTemplateSql(kind), [id, tenantId]);
  if (changed === 0) throw notFound(KINDS[kind].noun);
}

// Brands: every tenant has exactly one default brand (key "default", created with the tenant), which
// cannot be deleted. The plan's brand cap counts every brand, the default included, and is checked
// only here, on creation: sending never looks at it. Deleting a brand deletes its templates (FK cascade).
// The API names the resource a branding (/v1/brandings, BrandingResponse), as the spec does; the code
// names it a brand everywhere else (table brands, brand_key, BrandRow, createBrand).
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { query, queryOne } from '../base/db/sql.ts';
import type { Context } from '../base/context.ts';
import type { BrandRow } from '../channels/resolve.ts';
import { brandSenderWarnings } from '../channels/email/transport.ts';
import type { BrandSender, BrandValues, BrandingResponse, CreateBrandingRequest } from '../schemas/brandings.ts';
import { PLAN_DEFAULTS, getTenantLimit } from './tenant-limits.ts';

/** The tenant_limits name of the plan's brand cap. */
export const BRAND_LIMIT = 'brands';

const COLUMNS = 'id, key, "values", sender, is_default';

const COUNT_BRANDS = `SELECT count(*)::int AS n FROM brands WHERE tenant_id = $1`;
const LOCK_TENANT = `SELECT id FROM tenants WHERE id = $1 FOR UPDATE`;
const SELECT_BRAND_KEY = `SELECT 1 FROM brands WHERE tenant_id = $1 AND key = $2`;
const INSERT_BRAND = `INSERT INTO brands (id, tenant_id, key, "values", sender, is_default)
  VALUES ($1, $2, $3, $4, $5, false) RETURNING ${COLUMNS}`;
const LIST_BRANDS = `SELECT ${COLUMNS} FROM brands WHERE tenant_id = $1 ORDER BY is_default DESC, key`;
const GET_BRAND = `SELECT ${COLUMNS} FROM brands WHERE tenant_id = $1 AND key = $2`;
const DELETE_NON_DEFAULT_BRAND = `WITH target AS (SELECT id, is_default FROM brands WHERE tenant_id = $1 AND key = $2),
          gone AS (DELETE FROM brands b USING target t WHERE b.id = t.id AND NOT t.is_default RETURNING b.id)
     SELECT t.is_default, EXISTS (SELECT 1 FROM gone) AS deleted FROM target t`;
const SET_BRAND_VALUES = `UPDATE brands SET "values" = $3, updated_at = now()
  WHERE tenant_id = $1 AND key = $2 RETURNING ${COLUMNS}`;
const SET_BRAND_SENDER = `UPDATE brands SET sender = $3, updated_at = now()
  WHERE tenant_id = $1 AND key = $2 RETURNING ${COLUMNS}`;

/** `warnings`: what the brand's settings will not do (brandingResponses). */
export function toBrandingResponse(row: BrandRow, warnings: string[]): BrandingResponse {
  return {
    key: row.key,
    values: row.values,
    sender: {
      from_name: row.sender.from_name ?? null,
      from_email: row.sender.from_email ?? null,
      reply_to: row.sender.reply_to ?? null,
    },
    is_default: row.is_default,
    warnings,
  };
}

/** The brands' responses, with the warnings of each: a From address the install's SMTP will not send from. */
export async function brandingResponses(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  rows: BrandRow[],
): Promise<BrandingResponse[]> {
  const warningsOf = brandSenderWarnings(runtime, em, tenantId);
  const responses: BrandingResponse[] = [];
  for (const row of rows) responses.push(toBrandingResponse(row, await warningsOf(row.sender)));
  return responses;
}

export async function brandingResponse(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  row: BrandRow,
): Promise<BrandingResponse> {
  return (await brandingResponses(runtime, em, tenantId, [row]))[0]!;
}

function senderJson(sender: BrandSender): string {
  return JSON.stringify({
    from_name: sender.from_name ?? null,
    from_email: sender.from_email ?? null,
    reply_to: sender.reply_to ?? null,
  });
}

export async function brandLimit(em: EntityManager, tenantId: string): Promise<number> {
  return getTenantLimit(em, tenantId, BRAND_LIMIT, PLAN_DEFAULTS.brands);
}

export async function countBrands(em: EntityManager, tenantId: string): Promise<number> {
  const row = await queryOne<{ n: number }>(em, COUNT_BRANDS, [tenantId]);
  return row?.n ?? 0;
}

export async function createBrand(
  em: EntityManager,
  tenantId: string,
  input: CreateBrandingRequest,
): Promise<BrandRow> {
  return em.transactional(async (tx) => {
    // Serialise brand creation per tenant, so two concurrent creates cannot both pass the cap.
    await query(tx, LOCK_TENANT, [tenantId]);
    const existing = await queryOne(tx, SELECT_BRAND_KEY, [tenantId, input.key]);
    if (existing) throw new AppError('already_exists', `A branding with key ${input.key} already exists`);
    const [limit, count] = await Promise.all([brandLimit(tx, tenantId), countBrands(tx, tenantId)]);
    if (count >= limit) {
      throw new AppError(
        'plan_limit_reached',
        `The plan allows ${limit} brand(s) and this tenant has ${count}; delete one or ask the operator to raise the cap`,
      );
    }
    return (await queryOne<BrandRow>(tx, INSERT_BRAND, [
      newId(),
      tenantId,
      input.key,
      JSON.stringify(input.values),
      senderJson(input.sender),
    ]))!;
  });
}

export async function listBrands(em: EntityManager, tenantId: string): Promise<BrandRow[]> {
  return query<BrandRow>(em, LIST_BRANDS, [tenantId]);
}

export async function getBrand(em: EntityManager, tenantId: string, key: string): Promise<BrandRow> {
  const row = await queryOne<BrandRow>(em, GET_BRAND, [tenantId, key]);
  if (!row) throw notFound('Branding');
  return row;
}

export async function deleteBrand(em: EntityManager, tenantId: string, key: string): Promise<void> {
  const row = await queryOne<{ is_default: boolean; deleted: boolean }>(em, DELETE_NON_DEFAULT_BRAND, [tenantId, key]);
  if (!row) throw notFound('Branding');
  if (row.is_default) throw new AppError('default_brand', 'The default brand cannot be deleted');
}

export async function setBrandValues(
  em: EntityManager,
  tenantId: string,
  key: string,
  values: BrandValues,
): Promise<BrandRow> {
  const row = await queryOne<BrandRow>(em, SET_BRAND_VALUES, [tenantId, key, JSON.stringify(values)]);
  if (!row) throw notFound('Branding');
  return row;
}

export async function setBrandSender(
  em: EntityManager,
  tenantId: string,
  key: string,
  sender: BrandSender,
): Promise<BrandRow> {
  const row = await queryOne<BrandRow>(em, SET_BRAND_SENDER, [tenantId, key, senderJson(sender)]);
  if (!row) throw notFound('Branding');
  return row;
}

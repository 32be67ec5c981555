// Per-tenant limits: plan caps ("brands") and raised rate limits ("rate:<policy>", "rate:<policy>:burst").
// Set by local admins (herald tenants limits); read by the routes they govern.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query, queryOne } from '../base/db/sql.ts';

/** Plan caps and their defaults when a tenant has no override. */
export const PLAN_DEFAULTS = {
  brands: 10,
} as const;

const FIND_LIMIT = `SELECT value FROM tenant_limits WHERE tenant_id = $1 AND name = $2`;

const DELETE_LIMIT = `DELETE FROM tenant_limits WHERE tenant_id = $1 AND name = $2`;

const UPSERT_LIMIT = `INSERT INTO tenant_limits (tenant_id, name, value) VALUES ($1, $2, $3)
     ON CONFLICT (tenant_id, name) DO UPDATE SET value = EXCLUDED.value`;

const LIST_LIMITS = `SELECT name, value FROM tenant_limits WHERE tenant_id = $1 ORDER BY name`;

export async function getTenantLimit(
  em: EntityManager,
  tenantId: string,
  name: string,
  fallback: number,
): Promise<number> {
  const row = await queryOne<{ value: number }>(em, FIND_LIMIT, [tenantId, name]);
  return row ? Number(row.value) : fallback;
}

export async function setTenantLimit(
  em: EntityManager,
  tenantId: string,
  name: string,
  value: number | null,
): Promise<void> {
  if (value === null) {
    await query(em, DELETE_LIMIT, [tenantId, name]);
    return;
  }
  await query(em, UPSERT_LIMIT, [tenantId, name, value]);
}

export async function listTenantLimits(
  em: EntityManager,
  tenantId: string,
): Promise<Array<{ name: string; value: number }>> {
  const rows = await query<{ name: string; value: number }>(em, LIST_LIMITS, [tenantId]);
  return rows.map((r) => ({ name: r.name, value: Number(r.value) }));
}

// Tenants: creation (with the owner membership and the default brand, atomically), lookup, listing.
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../ids.ts';
import { query, queryOne } from '../db/sql.ts';

export interface TenantRow {
  id: string;
  name: string;
  archived_at: Date | null;
  created_at: Date;
}

/** The key of the brand every tenant is created with. */
export const DEFAULT_BRAND_KEY = 'default';

/**
 * Creates a tenant, its owner membership and its default brand (key "default", values.name = tenant
 * name) in one transaction. `makeDefault` makes the membership the owner's default tenant.
 */
export async function createTenant(
  em: EntityManager,
  input: { name: string; ownerUserId: string; makeDefault: boolean },
): Promise<TenantRow> {
  return em.transactional(async (tx) => {
    const id = newId();
    const tenant = (await queryOne<TenantRow>(
      tx,
      `INSERT INTO tenants (id, name) VALUES ($1, $2) RETURNING id, name, archived_at, created_at`,
      [id, input.name],
    ))!;
    if (input.makeDefault) {
      await query(tx, `UPDATE memberships SET is_default = false WHERE user_id = $1 AND is_default`, [input.ownerUserId]);
    }
    await query(tx, `INSERT INTO memberships (user_id, tenant_id, role, is_default) VALUES ($1, $2, 'owner', $3)`, [
      input.ownerUserId,
      id,
      input.makeDefault,
    ]);
    await query(tx, `INSERT INTO brands (id, tenant_id, key, "values", sender, is_default) VALUES ($1, $2, $3, $4, '{}', true)`, [
      newId(),
      id,
      DEFAULT_BRAND_KEY,
      JSON.stringify({ name: input.name }),
    ]);
    return tenant;
  });
}

export async function findTenant(em: EntityManager, id: string): Promise<TenantRow | undefined> {
  return queryOne<TenantRow>(em, `SELECT id, name, archived_at, created_at FROM tenants WHERE id = $1`, [id]);
}

export async function listAllTenants(em: EntityManager): Promise<TenantRow[]> {
  return query<TenantRow>(em, `SELECT id, name, archived_at, created_at FROM tenants ORDER BY created_at, id`);
}

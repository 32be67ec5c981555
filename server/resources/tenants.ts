// Tenants: creation (with the owner membership and the default brand, atomically), lookup, listing,
// and the console's tenancy rules (role judged by membership in the tenant named, archive, switching).
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../base/ids.ts';
import { execute, query, queryOne } from '../base/db/sql.ts';
import { AppError } from '../base/errors.ts';
import type { Config } from '../base/config.ts';
import { roleAtLeast, type MemberRole } from '../base/auth/roles.ts';
import { toIsoTimestamp } from '../base/timestamps.ts';

export interface TenantRow {
  id: string;
  name: string;
  archived_at: Date | null;
  require_mfa: boolean;
  created_at: Date;
}

/** The key of the brand every tenant is created with. */
export const DEFAULT_BRAND_KEY = 'default';

const INSERT_TENANT = `INSERT INTO tenants (id, name) VALUES ($1, $2)
  RETURNING id, name, archived_at, require_mfa, created_at`;

const CLEAR_DEFAULT_MEMBERSHIP = `UPDATE memberships SET is_default = false WHERE user_id = $1 AND is_default`;

const INSERT_OWNER_MEMBERSHIP = `INSERT INTO memberships (user_id, tenant_id, role, is_default)
  VALUES ($1, $2, 'owner', $3)`;

const INSERT_DEFAULT_BRAND = `INSERT INTO brands (id, tenant_id, key, "values", sender, is_default)
  VALUES ($1, $2, $3, $4, '{}', true)`;

const FIND_TENANT = `SELECT id, name, archived_at, require_mfa, created_at FROM tenants WHERE id = $1`;

const LIST_ALL_TENANTS = `SELECT id, name, archived_at, require_mfa, created_at FROM tenants ORDER BY created_at, id`;

const FIND_MEMBER_ROLE = `SELECT m.role FROM tenants t LEFT JOIN memberships m ON m.tenant_id = t.id AND m.user_id = $2
  WHERE t.id = $1`;

const FIND_MEMBERSHIP_TENANT = `SELECT t.id, t.name, t.archived_at, t.require_mfa, t.created_at, m.role, m.is_default
       FROM tenants t JOIN memberships m ON m.tenant_id = t.id AND m.user_id = $1 WHERE t.id = $2`;

const LIST_USER_TENANTS = `SELECT t.id, t.name, t.archived_at, t.require_mfa, t.created_at, m.role, m.is_default
       FROM memberships m JOIN tenants t ON t.id = m.tenant_id
      WHERE m.user_id = $1 AND ($2::boolean OR t.archived_at IS NULL)
      ORDER BY t.created_at, t.id`;

const UPDATE_TENANT = `UPDATE tenants SET name = coalesce($2, name), require_mfa = coalesce($3, require_mfa),
  updated_at = now() WHERE id = $1`;

const HAS_CONFIRMED_FACTOR = `SELECT 1 FROM mfa_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL`;

const ARCHIVE_TENANT = `UPDATE tenants SET archived_at = coalesce(archived_at, $2), updated_at = now() WHERE id = $1`;

const UNARCHIVE_TENANT = `UPDATE tenants SET archived_at = NULL, updated_at = now() WHERE id = $1`;

const RENAME_TENANT_RETURNING = `UPDATE tenants SET name = $2, updated_at = now() WHERE id = $1
  RETURNING id, name, archived_at, require_mfa, created_at`;

const SET_TENANT_ARCHIVED_RETURNING = `UPDATE tenants
     SET archived_at = CASE WHEN $2::boolean THEN coalesce(archived_at, now()) END, updated_at = now() WHERE id = $1
     RETURNING id, name, archived_at, require_mfa, created_at`;

const LOCK_MEMBERSHIP = `SELECT 1 FROM memberships WHERE user_id = $1 AND tenant_id = $2 FOR UPDATE`;

const CLEAR_OTHER_DEFAULT_MEMBERSHIPS = `UPDATE memberships SET is_default = false
  WHERE user_id = $1 AND is_default AND tenant_id <> $2`;

const SET_DEFAULT_MEMBERSHIP = `UPDATE memberships SET is_default = true WHERE user_id = $1 AND tenant_id = $2`;

const ANY_TENANT = `SELECT 1 FROM tenants LIMIT 1`;

const FIND_DEFAULT_MEMBERSHIP = `SELECT 1 FROM memberships WHERE user_id = $1 AND is_default`;

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
    const tenant = (await queryOne<TenantRow>(tx, INSERT_TENANT, [id, input.name]))!;
    if (input.makeDefault) {
      await query(tx, CLEAR_DEFAULT_MEMBERSHIP, [input.ownerUserId]);
    }
    await query(tx, INSERT_OWNER_MEMBERSHIP, [input.ownerUserId, id, input.makeDefault]);
    await query(tx, INSERT_DEFAULT_BRAND, [newId(), id, DEFAULT_BRAND_KEY, JSON.stringify({ name: input.name })]);
    return tenant;
  });
}

export async function findTenant(em: EntityManager, id: string): Promise<TenantRow | undefined> {
  return queryOne<TenantRow>(em, FIND_TENANT, [id]);
}

export async function listAllTenants(em: EntityManager): Promise<TenantRow[]> {
  return query<TenantRow>(em, LIST_ALL_TENANTS);
}

// ---- Console tenancy: the caller's tenants, owner-only changes, session switching ----

export type { MemberRole };

export interface TenantResponseBody {
  id: string;
  name: string;
  archived: boolean;
  role: MemberRole;
  is_default: boolean;
  require_mfa: boolean;
  created_at: string;
}

interface MembershipTenantRow extends TenantRow {
  role: MemberRole;
  is_default: boolean;
}

function toTenantResponse(row: MembershipTenantRow): TenantResponseBody {
  return {
    id: row.id,
    name: row.name,
    archived: row.archived_at !== null,
    role: row.role,
    is_default: row.is_default,
    require_mfa: row.require_mfa,
    created_at: toIsoTimestamp(row.created_at),
  };
}

/**
 * The caller's role in `tenantId`, judged by their membership in that tenant (not the token's tenant):
 * 404 no such tenant, 403 not a member, 403 below `minimum`.
 */
export async function requireMembership(
  em: EntityManager,
  userId: string,
  tenantId: string,
  minimum: MemberRole,
): Promise<MemberRole> {
  const row = await queryOne<{ role: MemberRole | null }>(em, FIND_MEMBER_ROLE, [tenantId, userId]);
  if (!row) throw new AppError('not_found', 'Tenant not found');
  if (row.role === null) throw new AppError('not_a_member', 'You are not a member of this tenant');
  if (!roleAtLeast(row.role, minimum)) throw new AppError('insufficient_role', `This action needs the ${minimum} role`);
  return row.role;
}

async function membershipTenant(em: EntityManager, userId: string, tenantId: string): Promise<TenantResponseBody> {
  const row = await queryOne<MembershipTenantRow>(em, FIND_MEMBERSHIP_TENANT, [userId, tenantId]);
  if (!row) throw new AppError('not_a_member', 'You are not a member of this tenant');
  return toTenantResponse(row);
}

/**
 * The tenants the user belongs to (the tenant switcher). Archived tenants are hidden unless
 * `includeArchived`, which the console uses to offer "unarchive" to their owners.
 */
export async function listUserTenants(
  em: EntityManager,
  userId: string,
  includeArchived: boolean,
): Promise<TenantResponseBody[]> {
  const rows = await query<MembershipTenantRow>(em, LIST_USER_TENANTS, [userId, includeArchived]);
  return rows.map(toTenantResponse);
}

/** POST /v1/auth/tenants: a new tenant owned by the caller (not made their default). Multi-tenant installs only. */
export async function createTenantForUser(
  config: Config,
  em: EntityManager,
  userId: string,
  name: string,
): Promise<TenantResponseBody> {
  if (config.mode === 'single')
    throw new AppError('tenant_creation_disabled', 'Tenant creation is disabled on this single-tenant install');
  const tenant = await createTenant(em, { name, ownerUserId: userId, makeDefault: false });
  return membershipTenant(em, userId, tenant.id);
}

/**
 * PATCH /v1/auth/tenants/{id} (owner): renames the tenant and/or requires a second factor of every
 * member. Requiring one takes the owner's own factor first (422 mfa_not_enabled), so the switch cannot
 * shut its owner out; members without one are held to the enrolment routes from their next request.
 */
export async function updateTenant(
  em: EntityManager,
  userId: string,
  tenantId: string,
  changes: { name?: string | undefined; requireMfa?: boolean | undefined },
): Promise<TenantResponseBody> {
  await requireMembership(em, userId, tenantId, 'owner');
  if (changes.requireMfa === true && !(await queryOne(em, HAS_CONFIRMED_FACTOR, [userId])))
    throw new AppError(
      'mfa_not_enabled',
      'Set up your own second factor before requiring one of every member of the tenant',
    );
  await execute(em, UPDATE_TENANT, [tenantId, changes.name ?? null, changes.requireMfa ?? null]);
  return membershipTenant(em, userId, tenantId);
}

/**
 * Archives (or reactivates) a tenant. An archived tenant keeps all its data; it is hidden from the
 * tenant switcher, its triggers are refused and fan-out skips it. Repeating either is harmless.
 */
export async function setTenantArchived(
  em: EntityManager,
  userId: string,
  tenantId: string,
  archived: boolean,
  nowMs: number,
): Promise<TenantResponseBody> {
  await requireMembership(em, userId, tenantId, 'owner');
  if (archived) {
    await execute(em, ARCHIVE_TENANT, [tenantId, new Date(nowMs)]);
  } else {
    await execute(em, UNARCHIVE_TENANT, [tenantId]);
  }
  return membershipTenant(em, userId, tenantId);
}

/** Admin operations without a console user (herald tenants ...): 404 when the tenant does not exist. */
export async function adminRenameTenant(em: EntityManager, tenantId: string, name: string): Promise<TenantRow> {
  const row = await queryOne<TenantRow>(em, RENAME_TENANT_RETURNING, [tenantId, name]);
  if (!row) throw new AppError('not_found', 'Tenant not found');
  return row;
}

export async function adminSetTenantArchived(
  em: EntityManager,
  tenantId: string,
  archived: boolean,
): Promise<TenantRow> {
  const row = await queryOne<TenantRow>(em, SET_TENANT_ARCHIVED_RETURNING, [tenantId, archived]);
  if (!row) throw new AppError('not_found', 'Tenant not found');
  return row;
}

/**
 * POST /v1/auth/session: checks the caller's membership in the target tenant (403 otherwise, also for
 * a tenant that does not exist, so the route reveals no tenant ids) and, with `remember`, makes it
 * their default.
 */
export async function switchTenant(
  em: EntityManager,
  userId: string,
  tenantId: string,
  remember: boolean,
): Promise<void> {
  await em.transactional(async (tx) => {
    const member = await queryOne(tx, LOCK_MEMBERSHIP, [userId, tenantId]);
    if (!member) throw new AppError('not_a_member', 'You are not a member of this tenant');
    if (!remember) return;
    await execute(tx, CLEAR_OTHER_DEFAULT_MEMBERSHIPS, [userId, tenantId]);
    await execute(tx, SET_DEFAULT_MEMBERSHIP, [userId, tenantId]);
  });
}

/** Whether the install has any tenant (a single-tenant install has at most one). */
export async function installHasTenant(em: EntityManager): Promise<boolean> {
  return (await queryOne(em, ANY_TENANT)) !== undefined;
}

/** Whether the user has a default tenant already (a tenant created for them then does not become it). */
export async function hasDefaultTenant(em: EntityManager, userId: string): Promise<boolean> {
  return (await queryOne(em, FIND_DEFAULT_MEMBERSHIP, [userId])) !== undefined;
}

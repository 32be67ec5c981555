// Tenants: creation (with the owner membership and the default brand, atomically), lookup, listing,
// and the console's tenancy rules (role judged by membership in the tenant named, archive, switching).
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../base/ids.ts';
import { execute, query, queryOne } from '../base/db/sql.ts';
import { AppError } from '../base/errors.ts';
import type { Config } from '../base/config.ts';
import { roleAtLeast, type MemberRole } from '../base/auth/roles.ts';
import { toIsoTimestamp } from '../base/timestamps.ts';
import type { Context } from '../base/context.ts';

export interface TenantRow {
  id: string;
  name: string;
  archived_at: Date | null;
  require_mfa: boolean;
  cors_origins: string[];
  created_at: Date;
}

/** The key of the brand every tenant is created with. */
export const DEFAULT_BRAND_KEY = 'default';

const INSERT_TENANT = `INSERT INTO tenants (id, name) VALUES ($1, $2)
  RETURNING id, name, archived_at, require_mfa, cors_origins, created_at`;

const CLEAR_DEFAULT_MEMBERSHIP = `UPDATE memberships SET is_default = false WHERE user_id = $1 AND is_default`;

const INSERT_OWNER_MEMBERSHIP = `INSERT INTO memberships (user_id, tenant_id, role, is_default)
  VALUES ($1, $2, 'owner', $3)`;

const INSERT_DEFAULT_BRAND = `INSERT INTO brands (id, tenant_id, key, "values", sender, is_default)
  VALUES ($1, $2, $3, $4, '{}', true)`;

const FIND_TENANT = `SELECT id, name, archived_at, require_mfa, cors_origins, created_at FROM tenants WHERE id = $1`;

const LIST_ALL_TENANTS = `SELECT id, name, archived_at, require_mfa, cors_origins, created_at FROM tenants
  ORDER BY created_at, id`;

const FIND_MEMBER_ROLE = `SELECT m.role FROM tenants t LEFT JOIN memberships m ON m.tenant_id = t.id AND m.user_id = $2
  WHERE t.id = $1`;

const FIND_MEMBERSHIP_TENANT = `SELECT t.id, t.name, t.archived_at, t.require_mfa, t.cors_origins, t.created_at,
       m.role, m.is_default FROM tenants t JOIN memberships m ON m.tenant_id = t.id AND m.user_id = $1 WHERE t.id = $2`;

const LIST_USER_TENANTS = `SELECT t.id, t.name, t.archived_at, t.require_mfa, t.cors_origins, t.created_at,
       m.role, m.is_default FROM memberships m JOIN tenants t ON t.id = m.tenant_id
      WHERE m.user_id = $1 AND ($2::boolean OR t.archived_at IS NULL)
      ORDER BY t.created_at, t.id`;

const UPDATE_TENANT = `UPDATE tenants SET name = coalesce($2, name), require_mfa = coalesce($3, require_mfa),
  cors_origins = coalesce($4::text[], cors_origins), updated_at = now() WHERE id = $1`;

const HAS_CONFIRMED_FACTOR = `SELECT 1 FROM mfa_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL`;

const ARCHIVE_TENANT = `UPDATE tenants SET archived_at = coalesce(archived_at, $2), updated_at = now() WHERE id = $1`;

const UNARCHIVE_TENANT = `UPDATE tenants SET archived_at = NULL, updated_at = now() WHERE id = $1`;

const RENAME_TENANT_RETURNING = `UPDATE tenants SET name = $2, updated_at = now() WHERE id = $1
  RETURNING id, name, archived_at, require_mfa, cors_origins, created_at`;

const SET_TENANT_ARCHIVED_RETURNING = `UPDATE tenants
     SET archived_at = CASE WHEN $2::boolean THEN coalesce(archived_at, now()) END, updated_at = now() WHERE id = $1
     RETURNING id, name, archived_at, require_mfa, cors_origins, created_at`;

const LOCK_MEMBERSHIP = `SELECT 1 FROM memberships WHERE user_id = $1 AND tenant_id = $2 FOR UPDATE`;

const CLEAR_OTHER_DEFAULT_MEMBERSHIPS = `UPDATE memberships SET is_default = false
  WHERE user_id = $1 AND is_default AND tenant_id <> $2`;

const SET_DEFAULT_MEMBERSHIP = `UPDATE memberships SET is_default = true WHERE user_id = $1 AND tenant_id = $2`;

const ANY_TENANT = `SELECT 1 FROM tenants LIMIT 1`;

const FIND_DEFAULT_MEMBERSHIP = `SELECT 1 FROM memberships WHERE user_id = $1 AND is_default`;

const FIND_TENANT_ORIGINS = `SELECT cors_origins FROM tenants WHERE id = $1`;

const ANY_TENANT_ORIGINS = `SELECT DISTINCT unnest(cors_origins) AS origin FROM tenants`;

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
  cors_origins: string[];
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
    cors_origins: row.cors_origins,
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
 * PATCH /v1/auth/tenants/{id} (owner): renames the tenant, requires a second factor of every member
 * and/or sets the browser origins its contact tokens answer. Requiring a factor takes the owner's own
 * first (422 mfa_not_enabled), so the switch cannot shut its owner out; members without one are held to
 * the enrolment routes from their next request. New origins hold in this process at once.
 */
export async function updateTenant(
  runtime: Context,
  em: EntityManager,
  userId: string,
  tenantId: string,
  changes: { name?: string | undefined; requireMfa?: boolean | undefined; corsOrigins?: string[] | undefined },
): Promise<TenantResponseBody> {
  await requireMembership(em, userId, tenantId, 'owner');
  if (changes.requireMfa === true && !(await queryOne(em, HAS_CONFIRMED_FACTOR, [userId])))
    throw new AppError(
      'mfa_not_enabled',
      'Set up your own second factor before requiring one of every member of the tenant',
    );
  await execute(em, UPDATE_TENANT, [
    tenantId,
    changes.name ?? null,
    changes.requireMfa ?? null,
    changes.corsOrigins ?? null,
  ]);
  if (changes.corsOrigins) tenantOriginsOf(runtime).remember(tenantId, changes.corsOrigins);
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

// ---- Browser origins: what the CORS layer asks on every request of a contact-token route ----

/** How long this process trusts the origins it read; a change made by another process shows within it. */
export const TENANT_ORIGINS_TTL_MS = 30_000;
const MAX_TENANTS_KEPT = 10_000;

interface Kept {
  origins: Promise<ReadonlySet<string>>;
  until: number;
}

/**
 * Tenants' browser origins, kept in memory so the inbox and the stream pay no query per request. The
 * promise is kept, not its value: concurrent requests share one read, and a change stored meanwhile
 * (remember) replaces the entry, so a read that began earlier never writes back what it saw.
 */
export class TenantOrigins {
  readonly #byTenant = new Map<string, Kept>();
  #anyTenant: Kept | null = null;
  readonly #runtime: Context;

  constructor(runtime: Context) {
    this.#runtime = runtime;
  }

  /** The origins `tenantId` allows (empty for a tenant that does not exist). */
  ofTenant(tenantId: string): Promise<ReadonlySet<string>> {
    const now = this.#runtime.clock.now();
    const kept = this.#byTenant.get(tenantId);
    if (kept && kept.until > now) return kept.origins;
    if (this.#byTenant.size >= MAX_TENANTS_KEPT) this.#byTenant.clear();
    const origins = queryOne<{ cors_origins: string[] }>(this.#runtime.orm.em.fork(), FIND_TENANT_ORIGINS, [
      tenantId,
    ]).then((row): ReadonlySet<string> => new Set(row?.cors_origins ?? []));
    const entry = { origins, until: now + TENANT_ORIGINS_TTL_MS };
    this.#byTenant.set(tenantId, entry);
    // A failed read is not kept: the next request reads again.
    origins.catch(() => {
      if (this.#byTenant.get(tenantId) === entry) this.#byTenant.delete(tenantId);
    });
    return origins;
  }

  /** Every origin some tenant allows: what a preflight, which carries no credential, is judged by. */
  ofAnyTenant(): Promise<ReadonlySet<string>> {
    const now = this.#runtime.clock.now();
    if (this.#anyTenant && this.#anyTenant.until > now) return this.#anyTenant.origins;
    const origins = query<{ origin: string }>(this.#runtime.orm.em.fork(), ANY_TENANT_ORIGINS).then(
      (rows): ReadonlySet<string> => new Set(rows.map((r) => r.origin)),
    );
    const entry = { origins, until: now + TENANT_ORIGINS_TTL_MS };
    this.#anyTenant = entry;
    origins.catch(() => {
      if (this.#anyTenant === entry) this.#anyTenant = null;
    });
    return origins;
  }

  /**
   * A tenant's new origins, written in this process: they hold here from now on. Stored before the
   * change commits, so a read racing the commit cannot keep the old list; should the transaction roll
   * back, the list the owner asked for holds here until the entry expires. The set of every tenant's
   * origins only gains them: one no longer listed is dropped when the set is read again, and meanwhile
   * lets a preflight through, which the actual response still refuses.
   */
  remember(tenantId: string, origins: readonly string[]): void {
    const until = this.#runtime.clock.now() + TENANT_ORIGINS_TTL_MS;
    this.#byTenant.set(tenantId, { origins: Promise.resolve(new Set(origins)), until });
    const any = this.#anyTenant;
    if (any) any.origins = any.origins.then((known) => new Set([...known, ...origins]));
  }
}

const tenantOrigins = new WeakMap<Context, TenantOrigins>();

/** The process's cache of tenants' browser origins (one per runtime). */
export function tenantOriginsOf(runtime: Context): TenantOrigins {
  let origins = tenantOrigins.get(runtime);
  if (!origins) {
    origins = new TenantOrigins(runtime);
    tenantOrigins.set(runtime, origins);
  }
  return origins;
}

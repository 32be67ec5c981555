// The --tenant option of local admin commands: a tenant id, checked to exist before anything is done.
import type { EntityManager } from '@mikro-orm/postgresql';
import { isUuid } from '../../server/base/ids.ts';
import { findTenant, listAllTenants, type TenantRow } from '../../server/resources/tenants.ts';
import { CliError, usageError } from './output.ts';

export function checkTenantId(value: string | undefined): string {
  if (!value) throw usageError('--tenant <id> is required');
  if (!isUuid(value)) throw usageError(`--tenant must be a tenant id (a UUID), got "${value}"`);
  return value;
}

export async function requireTenant(em: EntityManager, tenantId: string): Promise<TenantRow> {
  const tenant = await findTenant(em, tenantId);
  if (!tenant) throw new CliError(`no tenant with id ${tenantId}`);
  return tenant;
}

/** The --tenant given, else the install's only tenant (a single-mode install has exactly one). */
export async function resolveTenant(em: EntityManager, value: string | undefined): Promise<TenantRow> {
  if (value !== undefined) return requireTenant(em, checkTenantId(value));
  const tenants = await listAllTenants(em);
  if (tenants.length === 1) return tenants[0]!;
  const which = tenants.length === 0 ? 'the install has no tenant yet' : 'the install has several tenants';
  throw usageError(
    `${which}: give --tenant <id> (local mode; herald tenants list) or --url and a service key (remote mode)`,
  );
}

// The --tenant option of local admin commands: a tenant id, checked to exist before anything is done.
import type { EntityManager } from '@mikro-orm/postgresql';
import { isUuid } from '../../server/ids.ts';
import { findTenant, type TenantRow } from '../../server/services/tenants.ts';
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

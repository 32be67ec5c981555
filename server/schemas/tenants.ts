// Shapes of tenants and sessions (/v1/auth/tenants, /v1/auth/session).
import { z } from 'zod';
import { queryBoolean } from './common.ts';
import { tenantName } from './auth.ts';

export const Role = z.enum(['owner', 'admin']).meta({ id: 'Role' });

export const CreateTenantRequest = z.object({ name: tenantName }).meta({ id: 'CreateTenantRequest' });
export const UpdateTenantRequest = z
  .object({
    name: tenantName.optional(),
    require_mfa: z.boolean().optional().describe('Require a second factor of every member (owner only)'),
  })
  .refine((v) => v.name !== undefined || v.require_mfa !== undefined, { message: 'give name or require_mfa' })
  .meta({ id: 'UpdateTenantRequest' });
export const SessionRequest = z
  .object({ tenant_id: z.uuid({ message: 'must be a tenant id' }), remember: z.boolean().default(false) })
  .meta({ id: 'SessionRequest' });

export const TenantResponse = z
  .object({
    id: z.string(),
    name: z.string(),
    archived: z.boolean(),
    role: Role,
    is_default: z.boolean(),
    require_mfa: z.boolean(),
    created_at: z.string(),
  })
  .meta({ id: 'TenantResponse' });

export const TenantParams = z.object({ tenant_id: z.uuid({ message: 'must be a tenant id' }) });
export const ListTenantsQuery = z.object({ include_archived: queryBoolean.default(false) });

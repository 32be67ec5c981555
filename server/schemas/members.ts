// Shapes of tenant members (/v1/auth/tenants/{tenant_id}/members).
import { z } from 'zod';
import { Role } from './tenants.ts';

export const ChangeMemberRoleRequest = z.object({ role: Role }).meta({ id: 'ChangeMemberRoleRequest' });
export const MemberResponse = z
  .object({ user_id: z.string(), email: z.string(), role: Role })
  .meta({ id: 'MemberResponse' });
export const MemberParams = z.object({
  tenant_id: z.uuid({ message: 'must be a tenant id' }),
  user_id: z.uuid({ message: 'must be a user id' }),
});

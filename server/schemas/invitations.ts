// Shapes of invitations (/v1/auth/tenants/{tenant_id}/invitations) and invitation links (/v1/auth/invitations/{token}).
import { z } from 'zod';
import { email } from './common.ts';
import { Role } from './tenants.ts';
import { password } from './auth.ts';

export const InviteMemberRequest = z.object({ email, role: Role }).meta({ id: 'InviteMemberRequest' });
export const AcceptInvitationRequest = z.object({ password }).meta({ id: 'AcceptInvitationRequest' });

export const InvitationResponse = z
  .object({
    id: z.string(),
    email: z.string(),
    role: Role,
    status: z.enum(['pending', 'accepted', 'revoked']),
    expires_at: z.string(),
    created_at: z.string(),
  })
  .meta({ id: 'InvitationResponse' });
export const InvitationPreviewResponse = z
  .object({ email: z.string(), role: Role, tenant_name: z.string(), user_exists: z.boolean() })
  .meta({ id: 'InvitationPreviewResponse' });

export const InvitationParams = z.object({
  tenant_id: z.uuid({ message: 'must be a tenant id' }),
  invitation_id: z.uuid({ message: 'must be an invitation id' }),
});

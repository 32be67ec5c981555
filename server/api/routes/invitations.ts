// Invitations (admin or higher in the tenant of the path) and invitation links (the emailed token).
import { z } from 'zod';
import { defineRoute, reply } from '../route.ts';
import {
  AcceptInvitationRequest,
  InvitationParams,
  InvitationPreviewResponse,
  InvitationResponse,
  InviteMemberRequest,
} from '../../schemas/invitations.ts';
import { TenantParams } from '../../schemas/tenants.ts';
import { AccessTokenResponse, TokenParams } from '../../schemas/auth.ts';
import * as invitations from '../../resources/invitations.ts';
import { userIdOf } from '../auth-rules.ts';

const TAG = 'invitations';
export const inviteMember = defineRoute({
  method: 'POST',
  path: '/v1/auth/tenants/:tenant_id/invitations',
  summary: 'Invites an address to join the tenant as admin and emails the accept link (UserInvited, after commit)',
  tag: TAG,
  auth: 'user',
  params: TenantParams,
  body: InviteMemberRequest,
  responses: { 201: InvitationResponse },
  errors: [403, 404, 409],
  handler: ({ runtime, em, auth, params, body }) =>
    invitations.inviteMember(runtime, em, userIdOf(auth), params.tenant_id, body),
});

export const listInvitations = defineRoute({
  method: 'GET',
  path: '/v1/auth/tenants/:tenant_id/invitations',
  summary: "The tenant's pending invitations (admin or higher)",
  tag: TAG,
  auth: 'user',
  params: TenantParams,
  responses: { 200: z.array(InvitationResponse) },
  errors: [403, 404],
  handler: ({ em, auth, params }) => invitations.listPendingInvitations(em, userIdOf(auth), params.tenant_id),
});

export const revokeInvitation = defineRoute({
  method: 'DELETE',
  path: '/v1/auth/tenants/:tenant_id/invitations/:invitation_id',
  summary: 'Revokes a pending invitation (admin or higher)',
  tag: TAG,
  auth: 'user',
  params: InvitationParams,
  responses: { 204: null },
  errors: [403, 404, 409],
  handler: async ({ em, auth, params }) => {
    await invitations.revokeInvitation(em, userIdOf(auth), params.tenant_id, params.invitation_id);
    return reply(204);
  },
});

export const previewInvitation = defineRoute({
  method: 'GET',
  path: '/v1/auth/invitations/:token',
  summary: 'What an invitation link offers; only a pending, unexpired link resolves (otherwise 404)',
  tag: TAG,
  auth: 'public',
  params: TokenParams,
  responses: { 200: InvitationPreviewResponse },
  errors: [404],
  handler: ({ runtime, em, params }) => invitations.previewInvitation(runtime, em, params.token),
});

export const acceptInvitation = defineRoute({
  method: 'POST',
  path: '/v1/auth/invitations/:token/accept',
  summary:
    'Accepts an invitation as a new user: creates the verified user and membership (their default) and signs them in',
  tag: TAG,
  auth: 'public',
  params: TokenParams,
  body: AcceptInvitationRequest,
  responses: { 200: AccessTokenResponse },
  errors: [404, 409],
  handler: ({ runtime, em, params, body }) => invitations.acceptInvitation(runtime, em, params.token, body.password),
});

export const acceptInvitationExisting = defineRoute({
  method: 'POST',
  path: '/v1/auth/invitations/:token/accept-existing',
  summary: 'Accepts an invitation as the signed-in user it was sent to; answers a token for the joined tenant',
  tag: TAG,
  auth: 'user',
  params: TokenParams,
  responses: { 200: AccessTokenResponse },
  errors: [403, 404, 409],
  // The path's last parameter is the emailed token: it is never recorded.
  audit: {
    action: 'invitation.accept',
    id: () => null,
    tenant: (_ctx, result) => (result as { tenant_id: string }).tenant_id,
  },
  handler: ({ runtime, em, auth, params }) =>
    invitations.acceptInvitationAsUser(runtime, em, userIdOf(auth), params.token),
});

// Members of a tenant (admin or higher, judged by membership in the tenant of the path).
import { z } from 'zod';
import { defineRoute, reply } from '../route.ts';
import { ChangeMemberRoleRequest, MemberParams, MemberResponse } from '../../schemas/members.ts';
import { TenantParams } from '../../schemas/tenants.ts';
import * as members from '../../resources/members.ts';
import { userIdOf } from '../auth-rules.ts';

const TAG = 'members';
export const listMembers = defineRoute({
  method: 'GET',
  path: '/v1/auth/tenants/:tenant_id/members',
  summary: "The tenant's members with their roles (admin or higher)",
  tag: TAG,
  auth: 'user',
  params: TenantParams,
  responses: { 200: z.array(MemberResponse) },
  errors: [403, 404],
  handler: ({ em, auth, params }) => members.listMembers(em, userIdOf(auth), params.tenant_id),
});

export const changeMemberRole = defineRoute({
  method: 'PATCH',
  path: '/v1/auth/tenants/:tenant_id/members/:user_id',
  summary: "Changes a member's role (admin or higher; owners only by owners; never your own; never to owner)",
  tag: TAG,
  auth: 'user',
  params: MemberParams,
  body: ChangeMemberRoleRequest,
  responses: { 200: MemberResponse },
  errors: [403, 404, 409],
  handler: ({ em, auth, params, body }) =>
    members.changeMemberRole(em, userIdOf(auth), params.tenant_id, params.user_id, body.role),
});

export const removeMember = defineRoute({
  method: 'DELETE',
  path: '/v1/auth/tenants/:tenant_id/members/:user_id',
  summary:
    'Removes a member (admin or higher; owners only by owners; never yourself); a removed default tenant is replaced',
  tag: TAG,
  auth: 'user',
  params: MemberParams,
  responses: { 204: null },
  errors: [403, 404, 409],
  handler: async ({ em, auth, params }) => {
    await members.removeMember(em, userIdOf(auth), params.tenant_id, params.user_id);
    return reply(204);
  },
});

// Tenants and sessions of the signed-in console user. Owner-only actions are judged by the caller's
// membership in the tenant of the path, not by the tenant their token is scoped to.
import { defineRoute } from '../route.ts';
import {
  CreateTenantRequest,
  ListTenantsQuery,
  SessionRequest,
  TenantParams,
  TenantResponse,
  UpdateTenantRequest,
} from '../../schemas/tenants.ts';
import { AccessTokenResponse } from '../../schemas/auth.ts';
import { z } from 'zod';
import * as tenants from '../../resources/tenants.ts';
import { sessionTokenFor } from '../../resources/mfa.ts';
import { userIdOf } from '../auth-rules.ts';

const TAG = 'tenants';
export const listTenants = defineRoute({
  method: 'GET',
  path: '/v1/auth/tenants',
  summary: 'The tenants the user belongs to (the tenant switcher); archived ones only with include_archived=true',
  tag: TAG,
  auth: 'user',
  openDuringMfaEnrolment: true,
  query: ListTenantsQuery,
  responses: { 200: z.array(TenantResponse) },
  handler: ({ em, auth, query }) => tenants.listUserTenants(em, userIdOf(auth), query.include_archived),
});

export const createTenant = defineRoute({
  method: 'POST',
  path: '/v1/auth/tenants',
  summary:
    'Creates a tenant owned by the caller (not made their default) with its default brand; multi-tenant installs only',
  tag: TAG,
  auth: 'user',
  body: CreateTenantRequest,
  responses: { 201: TenantResponse },
  errors: [403],
  audit: { tenant: (_ctx, result) => (result as { id: string }).id },
  handler: ({ runtime, em, auth, body }) => tenants.createTenantForUser(runtime.config, em, userIdOf(auth), body.name),
});

export const updateTenant = defineRoute({
  method: 'PATCH',
  path: '/v1/auth/tenants/:tenant_id',
  summary:
    "Renames a tenant, requires a second factor of every member (requiring one takes the owner's own " +
    'first) and/or sets the browser origins its contact tokens answer (owner only)',
  tag: TAG,
  auth: 'user',
  params: TenantParams,
  body: UpdateTenantRequest,
  responses: { 200: TenantResponse },
  errors: [403, 404, 422],
  handler: ({ runtime, em, auth, params, body }) =>
    tenants.updateTenant(runtime, em, userIdOf(auth), params.tenant_id, {
      name: body.name,
      requireMfa: body.require_mfa,
      corsOrigins: body.cors_origins,
    }),
});

export const archiveTenant = defineRoute({
  method: 'POST',
  path: '/v1/auth/tenants/:tenant_id/archive',
  summary: 'Archives a tenant (owner only): hidden from the switcher, triggers refused, data retained',
  tag: TAG,
  auth: 'user',
  params: TenantParams,
  responses: { 200: TenantResponse },
  errors: [403, 404],
  handler: ({ runtime, em, auth, params }) =>
    tenants.setTenantArchived(em, userIdOf(auth), params.tenant_id, true, runtime.clock.now()),
});

export const unarchiveTenant = defineRoute({
  method: 'POST',
  path: '/v1/auth/tenants/:tenant_id/unarchive',
  summary: 'Reactivates an archived tenant (owner only)',
  tag: TAG,
  auth: 'user',
  params: TenantParams,
  responses: { 200: TenantResponse },
  errors: [403, 404],
  handler: ({ runtime, em, auth, params }) =>
    tenants.setTenantArchived(em, userIdOf(auth), params.tenant_id, false, runtime.clock.now()),
});

export const switchSession = defineRoute({
  method: 'POST',
  path: '/v1/auth/session',
  summary:
    'Switches tenant: an access token scoped to a tenant the user belongs to; remember=true makes it the default',
  tag: TAG,
  auth: 'user',
  // To a tenant that does not require a second factor; the answer says whether the target does.
  openDuringMfaEnrolment: true,
  body: SessionRequest,
  responses: { 200: AccessTokenResponse },
  errors: [403],
  audit: { exempt: 'a sign-in to another tenant: changes only which tenant the user lands in' },
  handler: async ({ runtime, em, auth, body }) => {
    await tenants.switchTenant(em, userIdOf(auth), body.tenant_id, body.remember);
    return sessionTokenFor(runtime, em, userIdOf(auth), body.tenant_id);
  },
});

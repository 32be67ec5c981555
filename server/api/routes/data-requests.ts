// Data requests of a tenant (owner only): file an export or a deletion, follow it, download the export.
import { defineRoute } from '../route.ts';
import { DataRequestBody, DataRequestParams, DataRequestResponse } from '../../schemas/data-requests.ts';
import { TenantParams } from '../../schemas/tenants.ts';
import { RATE_POLICIES } from '../../base/rate-limit.ts';
import * as dataRequests from '../../resources/data-requests.ts';
import { userIdOf } from '../auth-rules.ts';

const TAG = 'data-requests';
export const fileDataRequest = defineRoute({
  method: 'POST',
  path: '/v1/auth/tenants/:tenant_id/data-requests',
  summary: "Files an export or a deletion of the tenant's data as a job (owner only); 503 when it cannot be filed",
  tag: TAG,
  auth: 'user',
  params: TenantParams,
  body: DataRequestBody,
  responses: { 202: DataRequestResponse },
  errors: [403, 404, 503],
  // Shares the per-IP account-recovery budget with password-reset and resend-verification.
  rateLimit: ({ ip }) => [{ policy: RATE_POLICIES.accountRecovery, subject: ip }],
  handler: ({ runtime, em, auth, params, body }) =>
    dataRequests.fileDataRequest(runtime, em, userIdOf(auth), params.tenant_id, body.kind),
});

export const getDataRequest = defineRoute({
  method: 'GET',
  path: '/v1/auth/tenants/:tenant_id/data-requests/:id',
  summary: 'A data request with its status and, for a completed export, its download URL (owner only)',
  tag: TAG,
  auth: 'user',
  params: DataRequestParams,
  responses: { 200: DataRequestResponse },
  errors: [403, 404],
  handler: ({ em, auth, params }) => dataRequests.getDataRequest(em, userIdOf(auth), params.tenant_id, params.id),
});

export const downloadDataExport = defineRoute({
  method: 'GET',
  path: '/v1/auth/tenants/:tenant_id/data-requests/:id/download',
  summary: 'Streams a completed export as a JSON file (owner only)',
  tag: TAG,
  auth: 'user',
  params: DataRequestParams,
  produces: 'application/json',
  responses: { 200: null },
  errors: [403, 404],
  handler: async ({ em, auth, params }) => {
    const file = await dataRequests.openExport(em, userIdOf(auth), params.tenant_id, params.id);
    return new Response(file.stream, {
      status: 200,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(file.size),
        'content-disposition': `attachment; filename="${file.filename}"`,
      },
    });
  },
});

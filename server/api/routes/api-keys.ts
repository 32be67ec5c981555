// Service keys (management): issue, list, revoke.
import { z } from 'zod';
import { defineRoute } from '../route.ts';
import { ApiKeyParams, ApiKeyResponse, IssueApiKeyRequest, IssuedApiKeyResponse } from '../../schemas/api-keys.ts';
import { issueApiKey, listApiKeys, revokeApiKey } from '../../resources/api-keys.ts';

const tag = 'service keys';

export const issue = defineRoute({
  method: 'POST',
  path: '/v1/api-keys',
  summary: 'Issue a service key (the key is returned only in this response)',
  tag,
  auth: 'management',
  body: IssueApiKeyRequest,
  responses: { 201: IssuedApiKeyResponse },
  handler: ({ em, auth, body }) => issueApiKey(em, auth!.tenantId, body.name),
});

export const list = defineRoute({
  method: 'GET',
  path: '/v1/api-keys',
  summary: 'List the live service keys (revoked keys are not listed)',
  tag,
  auth: 'management',
  responses: { 200: z.array(ApiKeyResponse) },
  handler: ({ em, auth }) => listApiKeys(em, auth!.tenantId),
});

export const revoke = defineRoute({
  method: 'DELETE',
  path: '/v1/api-keys/:api_key_id',
  summary: 'Revoke a service key; it stops working at once',
  tag,
  auth: 'management',
  params: ApiKeyParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ runtime, em, auth, params }) => {
    await revokeApiKey(em, auth!.tenantId, params.api_key_id);
    // Other processes hear of it through the change notice; this one forgets the key before answering.
    runtime.serviceKeys.evict(params.api_key_id);
  },
});

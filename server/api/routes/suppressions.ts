// /v1/suppressions: the tenant's email suppression list.
import { defineRoute, reply } from '../route.ts';
import {
  AddSuppressionRequest,
  SuppressionListQuery,
  SuppressionListResponse,
  SuppressionParams,
  SuppressionResponse,
} from '../../schemas/suppressions.ts';
import { listSuppressions, removeSuppression, suppressAddress } from '../../channels/email/suppressions.ts';

const tag = 'suppressions';

export const list = defineRoute({
  method: 'GET',
  path: '/v1/suppressions',
  summary: 'Suppressed email addresses (bounced, complained or added by hand), by address',
  tag,
  auth: 'management',
  query: SuppressionListQuery,
  responses: { 200: SuppressionListResponse },
  handler: ({ em, auth, query }) => listSuppressions(em, auth!.tenantId, query),
});

export const add = defineRoute({
  method: 'POST',
  path: '/v1/suppressions',
  summary: 'Suppresses an address: the email channel skips it (201; 200 when it was already there)',
  tag,
  auth: 'management',
  body: AddSuppressionRequest,
  responses: { 201: SuppressionResponse, 200: SuppressionResponse },
  handler: async ({ em, auth, body }) => {
    const { entry, created } = await suppressAddress(em, auth!.tenantId, body.email, 'manual');
    return reply(created ? 201 : 200, entry);
  },
});

export const remove = defineRoute({
  method: 'DELETE',
  path: '/v1/suppressions/:email',
  summary: 'Lifts the suppression of an address',
  tag,
  auth: 'management',
  params: SuppressionParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    await removeSuppression(em, auth!.tenantId, params.email);
    return reply(204);
  },
});

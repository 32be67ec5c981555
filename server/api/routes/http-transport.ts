// The tenant's http channel transport: read, create or replace, remove, rotate the signing secret, and
// a test send. The signing secret is in the answer that creates or rotates it, and nowhere else.
import { defineRoute, reply, type RouteContext } from '../route.ts';
import {
  HttpTransportRequest,
  HttpTransportResponse,
  HttpTransportWithSecretResponse,
  SendTestHttpResponse,
} from '../../schemas/http-channel.ts';
import {
  deleteHttpTransport,
  getHttpTransport,
  putHttpTransport,
  rotateHttpSecret,
  testHttpTransport,
} from '../../channels/http/http-transport.ts';

const tag = 'transports';

/** What the audit entry keeps of a PUT: the header names, never their values. */
function auditedChanges({ body }: RouteContext): unknown {
  const input = body as HttpTransportRequest;
  return {
    url: input.url,
    include_secret_variables: input.include_secret_variables,
    ...(input.headers !== undefined ? { header_names: Object.keys(input.headers).sort() } : {}),
  };
}

export const getHttpTransportRoute = defineRoute({
  method: 'GET',
  path: '/v1/http-transport',
  summary: "The tenant's http transport: its URL and header names (never the header values or the secret)",
  tag,
  auth: 'management',
  responses: { 200: HttpTransportResponse },
  errors: [404],
  handler: ({ runtime, em, auth }) => getHttpTransport(runtime, em, auth!.tenantId),
});

export const putHttpTransportRoute = defineRoute({
  method: 'PUT',
  path: '/v1/http-transport',
  summary:
    "Creates or replaces the tenant's http transport; the answer that creates it carries the signing secret, shown this once",
  tag,
  auth: 'management',
  body: HttpTransportRequest,
  responses: { 200: HttpTransportResponse },
  errors: [422],
  audit: { changes: auditedChanges },
  handler: ({ runtime, em, auth, body }) => putHttpTransport(runtime, em, auth!.tenantId, body),
});

export const deleteHttpTransportRoute = defineRoute({
  method: 'DELETE',
  path: '/v1/http-transport',
  summary: "Removes the tenant's http transport (http deliveries are then skipped: no_transport)",
  tag,
  auth: 'management',
  responses: { 204: null },
  handler: async ({ em, auth }) => {
    await deleteHttpTransport(em, auth!.tenantId);
    return reply(204);
  },
});

export const rotateHttpSecretRoute = defineRoute({
  method: 'POST',
  path: '/v1/http-transport/rotate-secret',
  summary: 'Replaces the signing secret at once; the answer carries the new one, shown this once',
  tag,
  auth: 'management',
  responses: { 200: HttpTransportWithSecretResponse },
  errors: [404],
  audit: { changes: () => null },
  handler: ({ runtime, em, auth }) => rotateHttpSecret(runtime, em, auth!.tenantId),
});

export const testHttpTransportRoute = defineRoute({
  method: 'POST',
  path: '/v1/http-transport/test',
  summary: "Sends one signed POST with a sample body to the tenant's endpoint and reports its answer",
  tag,
  auth: 'management',
  responses: { 200: SendTestHttpResponse },
  errors: [404],
  audit: { exempt: 'a test send: changes nothing' },
  handler: ({ runtime, em, auth }) => testHttpTransport(runtime, em, auth!.tenantId),
});

// The tenant's email transport: read, replace, remove, and a test send; and its fallback transport,
// asked when the primary (or the install's default SMTP standing in for it) fails for now.
import { defineRoute, reply } from '../route.ts';
import {
  EmailTransportRequest,
  EmailTransportResponse,
  SendTestEmailRequest,
  SendTestEmailResponse,
} from '../../schemas/transports.ts';
import {
  deleteEmailTransport,
  getEmailTransport,
  putEmailTransport,
  testEmailTransport,
} from '../../channels/email/email-transport.ts';

const tag = 'transports';

export const getEmailTransportRoute = defineRoute({
  method: 'GET',
  path: '/v1/email-transport',
  summary: "The tenant's email transport (the password is never returned)",
  tag,
  auth: 'management',
  responses: { 200: EmailTransportResponse },
  handler: ({ runtime, em, auth }) => getEmailTransport(runtime, em, auth!.tenantId),
});

export const putEmailTransportRoute = defineRoute({
  method: 'PUT',
  path: '/v1/email-transport',
  summary: "Creates or replaces the tenant's email transport; an omitted password keeps the stored one",
  tag,
  auth: 'management',
  body: EmailTransportRequest,
  responses: { 200: EmailTransportResponse },
  handler: ({ runtime, em, auth, body }) => putEmailTransport(runtime, em, auth!.tenantId, body),
});

export const deleteEmailTransportRoute = defineRoute({
  method: 'DELETE',
  path: '/v1/email-transport',
  summary: "Removes the tenant's email transport (email then goes through the install's default SMTP, if any)",
  tag,
  auth: 'management',
  responses: { 204: null },
  handler: async ({ em, auth }) => {
    await deleteEmailTransport(em, auth!.tenantId);
    return reply(204);
  },
});

export const testEmailTransportRoute = defineRoute({
  method: 'POST',
  path: '/v1/email-transport/test',
  summary: "Sends a test email through the tenant's transport and reports the SMTP server's answer",
  tag,
  auth: 'management',
  body: SendTestEmailRequest,
  responses: { 200: SendTestEmailResponse },
  errors: [422],
  audit: { exempt: 'a test send: changes nothing' },
  handler: ({ runtime, em, auth, body }) => testEmailTransport(runtime, em, auth!.tenantId, body.to),
});

export const getEmailFallbackRoute = defineRoute({
  method: 'GET',
  path: '/v1/email-transport/fallback',
  summary: "The tenant's fallback email transport (the password is never returned)",
  tag,
  auth: 'management',
  responses: { 200: EmailTransportResponse },
  handler: ({ runtime, em, auth }) => getEmailTransport(runtime, em, auth!.tenantId, 'fallback'),
});

export const putEmailFallbackRoute = defineRoute({
  method: 'PUT',
  path: '/v1/email-transport/fallback',
  summary:
    "Creates or replaces the tenant's fallback email transport, asked in the same attempt when the primary (or the install's default SMTP) fails for now; an omitted password keeps the stored one",
  tag,
  auth: 'management',
  body: EmailTransportRequest,
  responses: { 200: EmailTransportResponse },
  handler: ({ runtime, em, auth, body }) => putEmailTransport(runtime, em, auth!.tenantId, body, 'fallback'),
});

export const deleteEmailFallbackRoute = defineRoute({
  method: 'DELETE',
  path: '/v1/email-transport/fallback',
  summary: "Removes the tenant's fallback email transport",
  tag,
  auth: 'management',
  responses: { 204: null },
  handler: async ({ em, auth }) => {
    await deleteEmailTransport(em, auth!.tenantId, 'fallback');
    return reply(204);
  },
});

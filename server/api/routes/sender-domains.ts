// Sender domains (management): register (DKIM key generated), list, get, delete, refresh (DNS check).
import { z } from 'zod';
import { defineRoute } from '../route.ts';
import { RegisterSenderDomainRequest, SenderDomainParams, SenderDomainResponse } from '../../schemas/sender-domains.ts';
import {
  deleteSenderDomain,
  getSenderDomain,
  listSenderDomains,
  refreshSenderDomain,
  registerSenderDomain,
  toSenderDomainResponse,
} from '../../channels/email/sender-domains.ts';

const tag = 'sender domains';

export const register = defineRoute({
  method: 'POST',
  path: '/v1/sender-domains',
  summary: 'Register a sender domain: generates its DKIM key and answers the DNS record to publish',
  tag,
  auth: 'management',
  body: RegisterSenderDomainRequest,
  responses: { 201: SenderDomainResponse },
  errors: [409],
  handler: async ({ runtime, em, auth, body }) =>
    toSenderDomainResponse(await registerSenderDomain(runtime, em, auth!.tenantId, body.domain)),
});

export const list = defineRoute({
  method: 'GET',
  path: '/v1/sender-domains',
  summary: 'List sender domains',
  tag,
  auth: 'management',
  responses: { 200: z.array(SenderDomainResponse) },
  handler: async ({ em, auth }) => (await listSenderDomains(em, auth!.tenantId)).map(toSenderDomainResponse),
});

export const get = defineRoute({
  method: 'GET',
  path: '/v1/sender-domains/:domain',
  summary: 'Get a sender domain with its DNS records and state',
  tag,
  auth: 'management',
  params: SenderDomainParams,
  responses: { 200: SenderDomainResponse },
  errors: [404],
  handler: async ({ em, auth, params }) =>
    toSenderDomainResponse(await getSenderDomain(em, auth!.tenantId, params.domain)),
});

export const remove = defineRoute({
  method: 'DELETE',
  path: '/v1/sender-domains/:domain',
  summary: 'Delete a sender domain (its mail is no longer DKIM-signed)',
  tag,
  auth: 'management',
  params: SenderDomainParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    await deleteSenderDomain(em, auth!.tenantId, params.domain);
  },
});

export const refresh = defineRoute({
  method: 'POST',
  path: '/v1/sender-domains/:domain/refresh',
  summary: 'Check the DKIM record in DNS now: verified when published and matching, else failed',
  tag,
  auth: 'management',
  params: SenderDomainParams,
  responses: { 200: SenderDomainResponse },
  errors: [404],
  handler: async ({ runtime, em, auth, params }) =>
    toSenderDomainResponse(await refreshSenderDomain(runtime, em, auth!.tenantId, params.domain)),
});

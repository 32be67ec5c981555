// /v1/contacts: the recipients of a tenant, their contact tokens, and their language. Writes and
// token minting take a service key (the spec's table); reads also accept a console admin (support).
import { defineRoute, reply, type RouteContext } from '../route.ts';
import { RATE_POLICIES, tenantOverride, type RateCheck } from '../../base/rate-limit.ts';
import { AppError } from '../../base/errors.ts';
import { requestBodyChunks } from '../body.ts';
import { CONTACT_IMPORT_MAX_BYTES, importContacts } from '../../resources/contact-import.ts';
import {
  BulkContactsRequest,
  BulkContactsResponse,
  ContactIdParams,
  ContactImportResponse,
  ContactResponse,
  ContactTokenRequest,
  ContactTokenResponse,
  CreateContactRequest,
  SetQuietHoursRequest,
  FindContactQuery,
  ReplaceContactRequest,
  SetLanguageRequest,
} from '../../schemas/contacts.ts';
import {
  bulkUpsertContacts,
  contactInScope,
  toContactResponse,
  createContact,
  deleteContact,
  findContactByExternalId,
  getContact,
  mintContactToken,
  replaceContact,
  setContactLanguage,
  setContactQuietHours,
} from '../../resources/contacts.ts';

const TAG = 'contacts';

export const create = defineRoute({
  method: 'POST',
  path: '/v1/contacts',
  summary: 'Create a contact (409 when the external_id exists)',
  tag: TAG,
  auth: 'service',
  body: CreateContactRequest,
  responses: { 201: ContactResponse },
  errors: [409],
  handler: async ({ em, auth, body }) => toContactResponse(await createContact(em, auth!.tenantId, body)),
});

export const find = defineRoute({
  method: 'GET',
  path: '/v1/contacts',
  summary: 'Find the contact with an external_id (404 when there is none)',
  tag: TAG,
  auth: 'management',
  query: FindContactQuery,
  responses: { 200: ContactResponse },
  errors: [404],
  handler: async ({ em, auth, query }) =>
    toContactResponse(await findContactByExternalId(em, auth!.tenantId, query.external_id)),
});

export const get = defineRoute({
  method: 'GET',
  path: '/v1/contacts/:id',
  summary: 'Get a contact',
  tag: TAG,
  auth: 'management',
  params: ContactIdParams,
  responses: { 200: ContactResponse },
  errors: [404],
  handler: async ({ em, auth, params }) => toContactResponse(await getContact(em, auth!.tenantId, params.id)),
});

export const replace = defineRoute({
  method: 'PUT',
  path: '/v1/contacts/:id',
  summary: "Replace a contact's mutable fields (email, phone, name, language, properties)",
  tag: TAG,
  auth: 'service',
  params: ContactIdParams,
  body: ReplaceContactRequest,
  responses: { 200: ContactResponse },
  errors: [404],
  handler: async ({ em, auth, params, body }) =>
    toContactResponse(await replaceContact(em, auth!.tenantId, params.id, body)),
});

export const remove = defineRoute({
  method: 'DELETE',
  path: '/v1/contacts/:id',
  summary: 'Delete a contact, its preferences, push subscriptions and inbox',
  tag: TAG,
  auth: 'service',
  params: ContactIdParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    await deleteContact(em, auth!.tenantId, params.id);
    return reply(204);
  },
});

/** 20 calls a minute per tenant, shared by bulk writes and imports. */
const bulkWriteBudget = async ({ em, auth }: RouteContext): Promise<RateCheck[]> => [
  {
    policy: RATE_POLICIES.contactsBulk,
    subject: auth!.tenantId,
    override: await tenantOverride(em, auth!.tenantId, RATE_POLICIES.contactsBulk),
  },
];

export const bulk = defineRoute({
  method: 'POST',
  path: '/v1/contacts/bulk',
  summary: 'Create or update up to 500 contacts by external_id; invalid entries are reported, not fatal',
  tag: TAG,
  auth: 'service',
  body: BulkContactsRequest,
  responses: { 200: BulkContactsResponse },
  rateLimit: bulkWriteBudget,
  handler: async ({ em, auth, body }) => bulkUpsertContacts(em, auth!.tenantId, body.contacts),
});

const NDJSON = /^application\/(x-)?ndjson\s*(;|$)/i;

export const importNdjson = defineRoute({
  method: 'POST',
  path: '/v1/contacts/import',
  summary:
    'Create or update contacts from NDJSON (one contact a line, up to 100 MB, streamed); refused lines are reported by number, the others kept',
  tag: TAG,
  auth: 'service',
  streamedBody: {
    contentType: 'application/x-ndjson',
    itemSchema: CreateContactRequest,
    description:
      'One CreateContactRequest object a line; contacts are matched by external_id, a field left out keeps its stored value',
  },
  responses: { 200: ContactImportResponse },
  errors: [413, 415],
  audit: {
    exempt:
      'a streamed bulk load whose batches commit one by one (the lines before a broken stream are kept): it cannot share one transaction with an audit row',
  },
  // The bulk route's budget: an import call writes up to a million contacts.
  rateLimit: bulkWriteBudget,
  handler: async ({ em, auth, event }) => {
    if (!NDJSON.test(event.req.headers.get('content-type') ?? '')) {
      throw new AppError(
        'unsupported_media_type',
        'An import is NDJSON: send it with Content-Type: application/x-ndjson',
      );
    }
    const declared = Number(event.req.headers.get('content-length') ?? NaN);
    if (declared > CONTACT_IMPORT_MAX_BYTES)
      throw new AppError(
        'payload_too_large',
        `An import is at most ${CONTACT_IMPORT_MAX_BYTES} bytes; nothing was imported`,
      );
    return importContacts(em, auth!.tenantId, requestBodyChunks(event.req) ?? [], CONTACT_IMPORT_MAX_BYTES);
  },
});

export const token = defineRoute({
  method: 'POST',
  path: '/v1/contacts/tokens',
  summary: 'Mint a short-lived token scoped to one contact (404 when the contact is unknown)',
  tag: TAG,
  auth: 'service',
  body: ContactTokenRequest,
  responses: { 200: ContactTokenResponse },
  errors: [404],
  rateLimit: async ({ em, auth }) => [
    {
      policy: RATE_POLICIES.contactTokens,
      subject: auth!.tenantId,
      override: await tenantOverride(em, auth!.tenantId, RATE_POLICIES.contactTokens),
    },
  ],
  audit: { exempt: 'mints a short-lived contact token and changes nothing' },
  handler: async ({ runtime, em, auth, body }) => mintContactToken(runtime, em, auth!.tenantId, body.external_id),
});

export const language = defineRoute({
  method: 'PUT',
  path: '/v1/contacts/:id/language',
  summary: "Set the contact's preferred language (BCP 47)",
  tag: TAG,
  auth: 'either',
  params: ContactIdParams,
  body: SetLanguageRequest,
  responses: { 200: ContactResponse },
  errors: [404],
  handler: async ({ em, auth, params, body }) => {
    const contact = await contactInScope(em, auth!, params.id);
    return toContactResponse(await setContactLanguage(em, contact.tenant_id, contact.id, body.language));
  },
});

export const quietHours = defineRoute({
  method: 'PUT',
  path: '/v1/contacts/:id/quiet-hours',
  summary:
    "Set the contact's time zone and quiet hours: email, push and web push wait for their end; the inbox never does",
  tag: TAG,
  auth: 'either',
  params: ContactIdParams,
  body: SetQuietHoursRequest,
  responses: { 200: ContactResponse },
  errors: [404],
  handler: async ({ em, auth, params, body }) => {
    const contact = await contactInScope(em, auth!, params.id);
    return toContactResponse(await setContactQuietHours(em, contact.tenant_id, contact.id, body));
  },
});

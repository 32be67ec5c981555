// /v1/contacts/{id}/preferences: the contact's preference matrix (a tenant credential or the contact's own token).
import { defineRoute } from '../route.ts';
import { ContactIdParams } from '../../schemas/contacts.ts';
import { PreferencesResponse, SetPreferenceRequest } from '../../schemas/preferences.ts';
import { contactInScope } from '../../resources/contacts.ts';
import { preferenceMatrix, setPreference } from '../../resources/preferences.ts';

const TAG = 'preferences';

export const get = defineRoute({
  method: 'GET',
  path: '/v1/contacts/:id/preferences',
  summary: 'The preference matrix: every live notification type x channel',
  tag: TAG,
  auth: 'either',
  params: ContactIdParams,
  responses: { 200: PreferencesResponse },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    const contact = await contactInScope(em, auth!, params.id);
    return { preferences: await preferenceMatrix(em, contact.tenant_id, contact.id) };
  },
});

export const set = defineRoute({
  method: 'PUT',
  path: '/v1/contacts/:id/preferences',
  summary: 'Set one notification type x channel preference; answers the whole matrix',
  tag: TAG,
  auth: 'either',
  params: ContactIdParams,
  body: SetPreferenceRequest,
  responses: { 200: PreferencesResponse },
  errors: [404],
  handler: async ({ em, auth, params, body }) => {
    const contact = await contactInScope(em, auth!, params.id);
    await setPreference(em, contact.tenant_id, contact.id, body);
    return { preferences: await preferenceMatrix(em, contact.tenant_id, contact.id) };
  },
});

// /v1/contacts/{id}/notifications: the contact's in-app inbox. Contact token only, as the spec's
// credential column says: a backend that needs to act on an inbox mints a token for that contact.
import { defineRoute } from '../route.ts';
import { ContactIdParams } from '../../schemas/contacts.ts';
import {
  InboxItemParams,
  InboxItemResponse,
  InboxListQuery,
  InboxListResponse,
  ReadAllResponse,
  UpdateInboxItemRequest,
} from '../../schemas/inbox.ts';
import { contactInScope } from '../../resources/contacts.ts';
import { listInbox, readAllInbox, updateInboxItem } from '../../channels/inbox/inbox.ts';

const TAG = 'inbox';

export const list = defineRoute({
  method: 'GET',
  path: '/v1/contacts/:id/notifications',
  summary: "The contact's inbox, newest first, with the unread count",
  tag: TAG,
  auth: 'contact',
  params: ContactIdParams,
  query: InboxListQuery,
  responses: { 200: InboxListResponse },
  errors: [404],
  handler: async ({ em, auth, params, query }) => {
    const contact = await contactInScope(em, auth!, params.id);
    return listInbox(em, contact.id, query);
  },
});

export const update = defineRoute({
  method: 'PATCH',
  path: '/v1/contacts/:id/notifications/:notification_id',
  summary: 'Mark an inbox item read or unread, seen or unseen, archived or not',
  tag: TAG,
  auth: 'contact',
  params: InboxItemParams,
  body: UpdateInboxItemRequest,
  responses: { 200: InboxItemResponse },
  errors: [404],
  handler: async ({ em, auth, params, body }) => {
    const contact = await contactInScope(em, auth!, params.id);
    return updateInboxItem(em, contact.tenant_id, contact.id, params.notification_id, body);
  },
});

export const readAll = defineRoute({
  method: 'POST',
  path: '/v1/contacts/:id/notifications/read-all',
  summary: 'Mark every unread inbox item read',
  tag: TAG,
  auth: 'contact',
  params: ContactIdParams,
  responses: { 200: ReadAllResponse },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    const contact = await contactInScope(em, auth!, params.id);
    return readAllInbox(em, contact.tenant_id, contact.id);
  },
});

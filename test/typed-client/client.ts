// A client as a Herald user writes it: types generated from /v1/openapi.json by openapi-typescript
// (default options, written beside a copy of this file as api.ts by test/api/typed-client.test.ts), requests made
// with openapi-fetch. The test compiles it under tsc --strict, then runs it against a live server.
import createClient from 'openapi-fetch';
import type { components, paths } from './api.ts';

type EventStatus = components['schemas']['EventStatus'];
type InboxList = components['schemas']['InboxListResponse'];

// A response lists every field as present, those that have a default in a request included.
type Present<T> = undefined extends T ? false : true;
export const responsesComplete: Array<
  | Present<components['schemas']['EventResponse']['variables']>
  | Present<components['schemas']['NotificationTypeResponse']['opt_out']>
> = [true];

export interface ClientRun {
  eventId: string;
  status: EventStatus;
  inbox: InboxList;
}

const FINAL: EventStatus[] = ['delivered', 'partially_delivered', 'failed', 'skipped', 'canceled', 'digested'];

export async function run(baseUrl: string, serviceKey: string, externalId: string): Promise<ClientRun> {
  const herald = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${serviceKey}` } });

  // Fields with a default (description, opt_out, variables, ...) are left out: optional in requests.
  const type = await herald.POST('/v1/notification-types', {
    body: { key: 'order_shipped', channel_defaults: { email: false } },
  });
  if (type.error) throw new Error(`create type: ${JSON.stringify(type.error)}`);
  const template = await herald.POST('/v1/inbox-templates', {
    body: { notification_type_key: type.data.key, title: 'Order {{ order_id }} shipped', content: 'On its way' },
  });
  if (template.error) throw new Error(`create template: ${JSON.stringify(template.error)}`);

  // The trigger: no secret_variables (they default to {}).
  const triggered = await herald.POST('/v1/notifications', {
    body: {
      type: 'order_shipped',
      recipients: [{ external_id: externalId, name: 'Ann' }],
      variables: { order_id: 'A-1001' },
    },
  });
  if (triggered.error) throw new Error(`trigger: ${JSON.stringify(triggered.error)}`);
  const event = triggered.data.events[0];
  if (!event) throw new Error('the trigger created no event');

  let status: EventStatus = event.status;
  for (let attempt = 0; !FINAL.includes(status); attempt++) {
    if (attempt === 1200) throw new Error(`event ${event.event_id} still ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const read = await herald.GET('/v1/notifications/{event_id}', { params: { path: { event_id: event.event_id } } });
    if (read.error) throw new Error(`event status: ${JSON.stringify(read.error)}`);
    status = read.data.status;
  }

  const token = await herald.POST('/v1/contacts/tokens', { body: { external_id: externalId } });
  if (token.error) throw new Error(`contact token: ${JSON.stringify(token.error)}`);
  const contact = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token.data.token}` } });
  const inbox = await contact.GET('/v1/contacts/{id}/notifications', { params: { path: { id: event.contact_id } } });
  if (inbox.error) throw new Error(`inbox: ${JSON.stringify(inbox.error)}`);
  return { eventId: event.event_id, status, inbox: inbox.data };
}

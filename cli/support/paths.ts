// The API's paths, one place per resource: both modes send the same requests (see target.ts), and a
// path a command builds is built here, its parameters encoded.
import type { TemplateKind } from '../../server/resources/templates.ts';

const at = (value: string) => encodeURIComponent(value);

/** A query string of the values given (undefined ones left out), '' when there are none. */
export function query(values: Record<string, string | number | boolean | undefined>): string {
  const entries = Object.entries(values).filter(
    (entry): entry is [string, string | number | boolean] => entry[1] !== undefined,
  );
  return entries.length === 0 ? '' : '?' + new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString();
}

export const brandings = {
  list: () => '/v1/brandings',
  one: (key: string) => `/v1/brandings/${at(key)}`,
};

export const notificationTypes = {
  list: (includeDeleted?: boolean) => `/v1/notification-types${includeDeleted ? '?include_deleted=true' : ''}`,
  one: (key: string) => `/v1/notification-types/${at(key)}`,
  workflow: (key: string) => `/v1/notification-types/${at(key)}/workflow`,
};

export const templates = {
  list: (kind: TemplateKind, filter: Record<string, string | undefined> = {}) =>
    `/v1/${kind}-templates${query(filter)}`,
  one: (kind: TemplateKind, id: string) => `/v1/${kind}-templates/${at(id)}`,
};

export const suppressions = {
  list: (filter: Record<string, string | undefined>) => `/v1/suppressions${query(filter)}`,
  create: () => '/v1/suppressions',
  one: (email: string) => `/v1/suppressions/${at(email)}`,
};

export const webhooks = {
  list: (filter: Record<string, string | undefined> = {}) => `/v1/webhooks${query(filter)}`,
  one: (id: string) => `/v1/webhooks/${at(id)}`,
  test: (id: string) => `/v1/webhooks/${at(id)}/test`,
  rotateSecret: (id: string) => `/v1/webhooks/${at(id)}/rotate-secret`,
  deliveries: (id: string, filter: Record<string, string | undefined>) =>
    `/v1/webhooks/${at(id)}/deliveries${query(filter)}`,
};

export const configuration = {
  export: () => '/v1/configuration',
  apply: () => '/v1/configuration/apply',
};

export const topics = {
  list: () => '/v1/topics',
  one: (key: string) => `/v1/topics/${at(key)}`,
  subscribers: (key: string, filter: Record<string, string | undefined> = {}) =>
    `/v1/topics/${at(key)}/subscribers${query(filter)}`,
};

export const transports = {
  email: () => '/v1/email-transport',
  emailTest: () => '/v1/email-transport/test',
  emailFallback: () => '/v1/email-transport/fallback',
  push: () => '/v1/push-transport',
  pushOne: (provider: string) => `/v1/push-transport/${at(provider)}`,
  pushTest: (provider: string) => `/v1/push-transport/${at(provider)}/test`,
  sms: () => '/v1/sms-transport',
  smsOne: (provider: string) => `/v1/sms-transport/${at(provider)}`,
  smsTest: (provider: string) => `/v1/sms-transport/${at(provider)}/test`,
  chat: () => '/v1/chat-transport',
  chatOne: (provider: string) => `/v1/chat-transport/${at(provider)}`,
  chatTest: (provider: string) => `/v1/chat-transport/${at(provider)}/test`,
  http: () => '/v1/http-transport',
  httpTest: () => '/v1/http-transport/test',
};

export const apiKeys = {
  list: () => '/v1/api-keys',
  one: (id: string) => `/v1/api-keys/${at(id)}`,
};

export const contacts = {
  list: () => '/v1/contacts',
  byExternalId: (externalId: string) => `/v1/contacts?external_id=${at(externalId)}`,
  one: (id: string) => `/v1/contacts/${at(id)}`,
  bulk: () => '/v1/contacts/bulk',
  import: () => '/v1/contacts/import',
  tokens: () => '/v1/contacts/tokens',
  chatDestinations: (id: string) => `/v1/contacts/${at(id)}/chat-destinations`,
  chatDestination: (id: string, destinationId: string) =>
    `/v1/contacts/${at(id)}/chat-destinations/${at(destinationId)}`,
};

export const notifications = {
  trigger: () => '/v1/notifications',
  list: (search: URLSearchParams) => `/v1/notifications?${search}`,
  one: (id: string) => `/v1/notifications/${at(id)}`,
  cancel: () => '/v1/notifications/cancel',
};

export const broadcasts = {
  create: () => '/v1/broadcasts',
  list: (search: URLSearchParams) => `/v1/broadcasts?${search}`,
  one: (id: string) => `/v1/broadcasts/${at(id)}`,
  cancel: (id: string) => `/v1/broadcasts/${at(id)}/cancel`,
};

// Every resource kind of configuration as code, in the order they are created (deleted in reverse):
// types before the templates that name them, brands before their templates.
import type { ConfigurationKind } from './types.ts';
import { notificationTypesKind } from './notification-types.ts';
import { brandsKind } from './brands.ts';
import {
  chatTemplatesKind,
  emailTemplatesKind,
  httpTemplatesKind,
  inboxTemplatesKind,
  smsTemplatesKind,
} from './templates.ts';
import { senderDomainsKind } from './sender-domains.ts';
import { topicsKind } from './topics.ts';
import { webhooksKind } from './webhooks.ts';

export const configurationKinds: ConfigurationKind<any>[] = [
  notificationTypesKind,
  brandsKind,
  emailTemplatesKind,
  inboxTemplatesKind,
  smsTemplatesKind,
  chatTemplatesKind,
  httpTemplatesKind,
  senderDomainsKind,
  topicsKind,
  webhooksKind,
];

// Every HTTP route of Herald, in one table: one line per route, its credential rule visible in the
// route module's definition. Handlers stay thin (validate -> service -> response).
import type { RouteDefinition } from '../http/route.ts';
import * as system from './system.ts';
import * as contacts from './contacts.ts';
import * as preferences from './preferences.ts';
import * as pushSubscriptions from './push-subscriptions.ts';
import * as inbox from './inbox.ts';
import * as stream from './stream.ts';
import * as emailTransport from './email-transport.ts';
import * as pushTransports from './push-transports.ts';
import * as webPush from './web-push.ts';

export const routes: RouteDefinition<any, any, any>[] = [
  // system (no credential)
  system.healthz,
  system.readyz,
  system.openapi,
  // contacts (service key), contact tokens (service key), language (either)
  contacts.create,
  contacts.find,
  contacts.bulk,
  contacts.token,
  contacts.get,
  contacts.replace,
  contacts.remove,
  contacts.language,
  // preferences (either)
  preferences.get,
  preferences.set,
  // push subscriptions (either)
  pushSubscriptions.create,
  pushSubscriptions.list,
  pushSubscriptions.remove,
  // inbox and its real-time stream (contact token)
  inbox.list,
  inbox.update,
  inbox.readAll,
  stream.open,
  // transports (management) and the web-push public key (any credential of the tenant)
  emailTransport.getEmailTransportRoute,
  emailTransport.putEmailTransportRoute,
  emailTransport.deleteEmailTransportRoute,
  emailTransport.testEmailTransportRoute,
  pushTransports.listPushTransportsRoute,
  pushTransports.putPushTransportRoute,
  pushTransports.deletePushTransportRoute,
  pushTransports.testPushTransportRoute,
  webPush.webPushPublicKeyRoute,
];

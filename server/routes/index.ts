// Every HTTP route of Herald, in one table: one line per route, its credential rule visible in the
// route module's definition. Handlers stay thin (validate -> service -> response).
import type { RouteDefinition } from '../http/route.ts';
import * as system from './system.ts';
import * as emailTransport from './email-transport.ts';
import * as pushTransports from './push-transports.ts';
import * as webPush from './web-push.ts';

export const routes: RouteDefinition<any, any, any>[] = [
  // system (no credential)
  system.healthz,
  system.readyz,
  system.openapi,
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

// Every HTTP route of Herald, in one table: one line per route, its credential rule visible in the
// route module's definition. Handlers stay thin (validate -> service -> response).
import type { RouteDefinition } from '../http/route.ts';
import * as system from './system.ts';
import * as notifications from './notifications.ts';

export const routes: RouteDefinition<any, any, any>[] = [
  // system (no credential)
  system.healthz,
  system.readyz,
  system.openapi,
  // notifications (service key): trigger, event status, activity log
  notifications.triggerNotification,
  notifications.getNotificationEvent,
  notifications.listNotificationEvents,
];

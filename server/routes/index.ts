// Every HTTP route of Herald, in one table: one line per route, its credential rule visible in the
// route module's definition. Handlers stay thin (validate -> service -> response).
import type { RouteDefinition } from '../http/route.ts';
import * as system from './system.ts';
import * as staticFiles from './static.ts';

export const routes: RouteDefinition<any, any, any>[] = [
  // system (no credential)
  system.healthz,
  system.readyz,
  system.openapi,
  // static: browser SDK and demo page (no credential)
  staticFiles.sdkClient,
  staticFiles.sdkWidget,
  staticFiles.sdkServiceWorker,
  staticFiles.sdkTypes,
  staticFiles.demoPage,
  staticFiles.demoScript,
  staticFiles.demoStyles,
];

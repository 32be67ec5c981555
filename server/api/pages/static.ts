// Browser files served by Herald itself: the SDK under /sdk (client, inbox widget, web push service
// worker, TypeScript types) and the demo page under /demo (local installs only, see demoEnabled).
import { z } from 'zod';
import { AppError } from '../../base/errors.ts';
import { defineRoute, type RouteDefinition } from '../route.ts';
import { DEMO_ASSETS, SDK_ASSETS, assetResponse, demoEnabled, type StaticAsset } from './static-assets.ts';

const FileBody = z.string().meta({ description: 'The file' });

function fileRoute(
  path: string,
  summary: string,
  asset: StaticAsset,
  options: { demo?: boolean } = {},
): RouteDefinition {
  return defineRoute({
    method: 'GET',
    path,
    summary,
    tag: 'static',
    auth: 'public',
    produces: asset.contentType.split(';')[0]!,
    headers: [{ name: 'If-None-Match', description: 'ETag of a cached copy: answers 304 when it is current' }],
    responses: { 200: FileBody, 304: null },
    errors: options.demo ? [404] : [],
    handler: ({ runtime, event }) => {
      if (options.demo && !demoEnabled(runtime.config)) {
        throw new AppError('not_found', 'The demo page is off on this install (config "demo")');
      }
      return assetResponse(asset, event.req);
    },
  });
}

export const sdkClient = fileRoute(
  '/sdk/herald.js',
  'Browser client (ES module): inbox, preferences, web push, live stream',
  SDK_ASSETS.client,
);
export const sdkWidget = fileRoute(
  '/sdk/herald-inbox.js',
  'Inbox widget (ES module defining <herald-inbox>)',
  SDK_ASSETS.widget,
);
export const sdkServiceWorker = fileRoute(
  '/sdk/herald-sw.js',
  'Web push service worker (import it from your own worker)',
  SDK_ASSETS.serviceWorker,
);
export const sdkTypes = fileRoute(
  '/sdk/herald.d.ts',
  'TypeScript declarations of the browser client',
  SDK_ASSETS.types,
);
export const demoPage = fileRoute(
  '/demo',
  'Demo page: paste a contact token and watch notifications arrive',
  DEMO_ASSETS.page,
  { demo: true },
);
export const demoScript = fileRoute('/demo/demo.js', 'Script of the demo page', DEMO_ASSETS.script, { demo: true });
export const demoStyles = fileRoute('/demo/demo.css', 'Styles of the demo page', DEMO_ASSETS.styles, { demo: true });

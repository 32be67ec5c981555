// The console Herald serves itself, and the pages the system emails link to (/verify-email,
// /reset-password, /invitations/{token}) with /login and /forgot-password: one HTML page whose script
// routes by path and calls only the public /v1 API with a Bearer token (no cookies, so no CSRF).
import { z } from 'zod';
import { AppError } from '../../base/errors.ts';
import { defineRoute, type RouteDefinition } from '../route.ts';
import { CONSOLE_ASSETS, CONSOLE_PAGE, PREVIEW_FRAME, assetResponse } from './static-assets.ts';

const TAG = 'console';
const Html = z.string().meta({ description: 'The console page' });
const CACHE_HEADER = [{ name: 'If-None-Match', description: 'ETag of a cached copy: answers 304 when it is current' }];

function page(path: string, summary: string, params?: z.ZodObject): RouteDefinition<any, any, any> {
  return defineRoute({
    method: 'GET',
    path,
    summary,
    tag: TAG,
    auth: 'public',
    ...(params ? { params } : {}),
    produces: 'text/html',
    headers: CACHE_HEADER,
    responses: { 200: Html, 304: null },
    // Link tokens ride in the query or path: the page reads them in the browser; the server ignores them.
    handler: ({ event }) => assetResponse(CONSOLE_PAGE, event.req),
  });
}

// Any name: the page itself sends an unknown section to the first one.
const ConsoleSectionParams = z.object({ section: z.string().min(1).max(60) });
const InvitationPageParams = z.object({ token: z.string().min(1).max(256) });
const ConsoleAssetParams = z.object({
  file: z.string().regex(/^[a-z0-9-]{1,60}\.(js|css|svg)$/, 'must be a console file name'),
});

export const consoleAsset = defineRoute({
  method: 'GET',
  path: '/console/assets/:file',
  summary: "The console's scripts (ES modules) and styles",
  tag: TAG,
  auth: 'public',
  params: ConsoleAssetParams,
  produces: 'text/javascript',
  headers: CACHE_HEADER,
  responses: { 200: z.string().meta({ description: 'The file' }), 304: null },
  errors: [404],
  handler: ({ params, event }) => {
    const asset = CONSOLE_ASSETS.get(params.file);
    if (!asset) throw new AppError('not_found', 'No such console file');
    return assetResponse(asset, event.req);
  },
});

export const previewFrame = defineRoute({
  method: 'GET',
  path: '/console/frame/preview',
  summary: "The console's sandboxed email preview frame",
  tag: TAG,
  auth: 'public',
  produces: 'text/html',
  headers: CACHE_HEADER,
  responses: { 200: Html, 304: null },
  handler: ({ event }) => assetResponse(PREVIEW_FRAME, event.req),
});

// The server cannot tell a signed-in browser (the token lives in the tab, never in a cookie), so the
// way in is the console, whose page signs in first where the tab holds no token.
export const entry = defineRoute({
  method: 'GET',
  path: '/',
  summary: 'The way in for a browser: 302 to the console, which sends a signed-out tab on to /login',
  tag: TAG,
  auth: 'public',
  responses: { 302: null },
  notAnOperation: 'a browser entry point, not an API operation',
  handler: () => new Response(null, { status: 302, headers: { Location: '/console' } }),
});

export const routes: RouteDefinition<any, any, any>[] = [
  entry,
  page('/login', 'Sign-in page (password or SSO)'),
  page('/forgot-password', 'Page to ask for a password reset link'),
  page('/reset-password', 'Page of the emailed password reset link (?token=)'),
  page('/verify-email', 'Page of the emailed verification link (?token=)'),
  page(
    '/invitations/:token',
    'Page of the emailed invitation link: join with a new password, or as the signed-in user',
    InvitationPageParams,
  ),
  page('/console', 'The console for tenant admins and owners'),
  page('/console/:section', 'A section of the console', ConsoleSectionParams),
  previewFrame,
  consoleAsset,
];

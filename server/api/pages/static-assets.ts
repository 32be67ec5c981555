// The files Herald serves to browsers as they are (no build step): the SDK (client, widget, service
// worker, types) under /sdk and the demo page under /demo. Each file is read once, with a strong
// ETag from its content, and answered with its content type, caching and security headers;
// If-None-Match revalidations answer 304 without a body.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import type { Config } from '../../base/config.ts';

const STATIC_DIR = new URL('../../static/', import.meta.url);

export interface StaticAsset {
  /** Path under server/static/, e.g. sdk/herald.js */
  file: string;
  contentType: string;
  headers: Record<string, string>;
}

interface LoadedAsset {
  body: Buffer;
  etag: string;
}

const loaded = new Map<string, LoadedAsset>();

function load(file: string): LoadedAsset {
  let asset = loaded.get(file);
  if (!asset) {
    const body = readFileSync(new URL(file, STATIC_DIR));
    asset = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
    loaded.set(file, asset);
  }
  return asset;
}

const JS = 'text/javascript; charset=utf-8';

// SDK files are public code meant to be loaded from the tenant's own origin: any origin may read
// them (no credentials involved), and a page isolated with COEP may embed them.
const SDK_HEADERS = {
  'Access-Control-Allow-Origin': '*',
  'Cross-Origin-Resource-Policy': 'cross-origin',
  'Cache-Control': 'public, max-age=300, must-revalidate',
};

// The demo page loads only same-origin files (no inline script or style) and talks only to Herald.
export const DEMO_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "worker-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const SDK_ASSETS = {
  client: { file: 'sdk/herald.js', contentType: JS, headers: SDK_HEADERS },
  widget: { file: 'sdk/herald-inbox.js', contentType: JS, headers: SDK_HEADERS },
  types: { file: 'sdk/herald.d.ts', contentType: 'application/typescript; charset=utf-8', headers: SDK_HEADERS },
  // A service worker's own CSP governs the worker: it shows notifications (icons) and opens windows.
  // no-cache: browsers revalidate the worker on every check, so a fix reaches them at once.
  serviceWorker: {
    file: 'sdk/herald-sw.js',
    contentType: JS,
    headers: {
      ...SDK_HEADERS,
      'Cache-Control': 'no-cache',
      'Service-Worker-Allowed': '/',
      'Content-Security-Policy': "default-src 'none'; img-src https: data:",
    },
  },
} satisfies Record<string, StaticAsset>;

export const DEMO_ASSETS = {
  page: {
    file: 'demo/index.html',
    contentType: 'text/html; charset=utf-8',
    headers: { 'Cache-Control': 'no-cache', 'Content-Security-Policy': DEMO_CSP },
  },
  script: { file: 'demo/demo.js', contentType: JS, headers: { 'Cache-Control': 'no-cache' } },
  styles: { file: 'demo/demo.css', contentType: 'text/css; charset=utf-8', headers: { 'Cache-Control': 'no-cache' } },
} satisfies Record<string, StaticAsset>;

/** The asset as a Response: 200 with the body, or 304 when the client's copy is current. */
export function assetResponse(asset: StaticAsset, request: Request): Response {
  const { body, etag } = load(asset.file);
  const headers = { ...asset.headers, ETag: etag };
  if (etagMatches(request.headers.get('if-none-match'), etag)) return new Response(null, { status: 304, headers });
  return new Response(request.method === 'HEAD' ? null : new Uint8Array(body), {
    status: 200,
    headers: { ...headers, 'Content-Type': asset.contentType, 'Content-Length': String(body.length) },
  });
}

function etagMatches(header: string | null, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((candidate) => {
    const value = candidate.trim();
    return value === '*' || value === etag || value === `W/${etag}`;
  });
}

const LOOPBACK = /^(127(\.\d{1,3}){3}|::1|localhost|\[::1\])$/i;

/** The demo page is on when configured so, or by default when Herald listens on loopback only. */
export function demoEnabled(config: Config): boolean {
  return config.demo ?? LOOPBACK.test(config.host);
}

// The console and the pages the system emails link to: one HTML page (the browser routes by path),
// its ES modules and its styles, as they are under static/console/. The policy allows no inline
// script or style: every script and sheet is a same-origin file, and tenant content is shown as text
// or inside a sandboxed frame (which, in Chromium, inherits this policy: a template's script cannot run).
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data: https:; font-src 'self'; " +
  "frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const CONSOLE_PAGE: StaticAsset = {
  file: 'console/index.html',
  contentType: 'text/html; charset=utf-8',
  headers: { 'Cache-Control': 'no-cache', 'Content-Security-Policy': CONSOLE_CSP },
};

const CONSOLE_TYPES: Record<string, string> = { js: JS, css: 'text/css; charset=utf-8', svg: 'image/svg+xml' };

/** The console's files by name (app.js, console.css ...): every file of static/console/ but the page. */
export const CONSOLE_ASSETS: ReadonlyMap<string, StaticAsset> = new Map(
  readdirSync(new URL('console/', STATIC_DIR))
    .filter((name) => name !== 'index.html' && name.split('.').pop()! in CONSOLE_TYPES)
    .map((name) => [
      name,
      {
        file: `console/${name}`,
        contentType: CONSOLE_TYPES[name.split('.').pop()!]!,
        headers: { 'Cache-Control': 'no-cache' },
      },
    ]),
);

// The email preview frame (framed only by the console, sandboxed to an opaque origin): the email's
// own styles and images apply; its scripts, handlers and forms do not, and only the frame's own
// script runs, which shows what the console posts to it.
export const PREVIEW_FRAME: StaticAsset = {
  file: 'console/preview.html',
  contentType: 'text/html; charset=utf-8',
  headers: {
    'Cache-Control': 'no-cache',
    'Content-Security-Policy':
      "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src https: data:; font-src https: data:; " +
      "base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox allow-scripts",
    'X-Frame-Options': 'SAMEORIGIN',
  },
};

// The browser files Herald serves: the SDK under /sdk and the demo page under /demo (content types,
// caching with ETag revalidation, CORS for cross-origin module loading, CSP, and the demo switch).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('GET /sdk/herald.js', () => {
  it('serves the client as a cacheable JavaScript module any origin may load', async () => {
    const res = await app.request('GET', '/sdk/herald.js', { headers: { origin: 'https://shop.example' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('public, max-age=300, must-revalidate');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.text).toContain('export function createHerald');
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(res.text));
  });

  it('answers 304 without a body when If-None-Match holds the current ETag', async () => {
    const first = await app.request('GET', '/sdk/herald.js');
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    const again = await app.request('GET', '/sdk/herald.js', { headers: { 'if-none-match': `"stale", ${etag}` } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    const stale = await app.request('GET', '/sdk/herald.js', { headers: { 'if-none-match': '"stale"' } });
    expect(stale.status).toBe(200);
  });
});

describe('GET /sdk/herald-inbox.js', () => {
  it('serves the widget module, which imports the client relatively', async () => {
    const res = await app.request('GET', '/sdk/herald-inbox.js');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.text).toContain("customElements.define('herald-inbox'");
  });
});

describe('GET /sdk/herald-sw.js', () => {
  it('serves the service worker revalidated on every check, allowed any scope, with its own CSP', async () => {
    const res = await app.request('GET', '/sdk/herald-sw.js');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('service-worker-allowed')).toBe('/');
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; img-src https: data:");
    expect(res.text).toContain("addEventListener('push'");
  });
});

describe('GET /sdk/herald.d.ts', () => {
  it('serves the TypeScript declarations', async () => {
    const res = await app.request('GET', '/sdk/herald.d.ts');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/typescript; charset=utf-8');
    expect(res.text).toContain('export declare function createHerald');
  });
});

describe('GET /demo', () => {
  it('serves the demo page on a loopback install, under a strict CSP without inline script', async () => {
    const res = await app.request('GET', '/demo');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.text).toContain('<script type="module" src="/demo/demo.js"></script>');
    expect(res.text).not.toMatch(/<script>|<script type="module">|<style>|\sstyle="/);
    for (const path of ['/demo/demo.js', '/demo/demo.css']) {
      const asset = await app.request('GET', path);
      expect(asset.status, path).toBe(200);
    }
  });

  it('lists the static routes in the OpenAPI document with their media types', async () => {
    const res = await app.request('GET', '/v1/openapi.json');
    const sdk = res.body.paths['/sdk/herald.js'].get;
    expect(sdk.tags).toEqual(['static']);
    expect(Object.keys(sdk.responses['200'].content)).toEqual(['text/javascript']);
    expect(sdk.responses['304']).toBeDefined();
    expect(Object.keys(res.body.paths['/demo'].get.responses['200'].content)).toEqual(['text/html']);
    expect(res.body.paths['/demo'].get.responses['404']).toBeDefined();
  });
});

describe('demo switch', () => {
  it('answers 404 for the demo when config demo is false, while /sdk stays served', async () => {
    const off = await startTestApp({
      config: { demo: false, encryptionKeys: app.config.encryptionKeys },
      database: app.database,
    });
    try {
      for (const path of ['/demo', '/demo/demo.js', '/demo/demo.css']) {
        const res = await off.request('GET', path);
        expect(res.status, path).toBe(404);
        expect(res.body.code).toBe('not_found');
      }
      expect((await off.request('GET', '/sdk/herald.js')).status).toBe(200);
    } finally {
      await off.close();
    }
  });

  it('is off by default when Herald listens beyond loopback, and on when configured', async () => {
    const { demoEnabled } = await import('../../../server/api/pages/static-assets.ts');
    const base = app.config;
    expect(demoEnabled({ ...base, host: '127.0.0.1', demo: undefined })).toBe(true);
    expect(demoEnabled({ ...base, host: '::1', demo: undefined })).toBe(true);
    expect(demoEnabled({ ...base, host: 'localhost', demo: undefined })).toBe(true);
    expect(demoEnabled({ ...base, host: '0.0.0.0', demo: undefined })).toBe(false);
    expect(demoEnabled({ ...base, host: '10.1.2.3', demo: undefined })).toBe(false);
    expect(demoEnabled({ ...base, host: '0.0.0.0', demo: true })).toBe(true);
    expect(demoEnabled({ ...base, host: '127.0.0.1', demo: false })).toBe(false);
  });
});

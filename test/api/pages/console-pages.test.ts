// The console's files over HTTP: every link page answers the console page under its strict policy,
// scripts and styles come from /console/assets with revalidation, unknown files are 404, and the
// email preview frame is sandboxed by its own policy and may be framed only by the console.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('console pages', () => {
  it.each([
    '/login',
    '/forgot-password',
    '/reset-password?token=abc',
    '/verify-email?token=abc',
    '/invitations/some-token',
    '/console',
    '/console/activity',
    '/console/Unknown',
  ])('%s answers the console page under a strict policy', async (path) => {
    const res = await fetch(app.url + path);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("style-src 'self';");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('set-cookie')).toBeNull();
    const html = await res.text();
    expect(html).toContain('<script type="module" src="/console/assets/app.js"></script>');
    expect(html).not.toMatch(/<script>|\sstyle=|\son[a-z]+=/);
  });

  it('serves the scripts and styles with an ETag, and 304 when current', async () => {
    for (const file of [
      'app.js',
      'api.js',
      'dom.js',
      'auth-pages.js',
      'sections.js',
      'console.css',
      'logo.svg',
      'preview-frame.js',
    ]) {
      const res = await fetch(`${app.url}/console/assets/${file}`);
      expect(res.status, file).toBe(200);
      const etag = res.headers.get('etag')!;
      expect((await fetch(`${app.url}/console/assets/${file}`, { headers: { 'If-None-Match': etag } })).status).toBe(
        304,
      );
    }
    expect((await fetch(`${app.url}/console/assets/app.js`)).headers.get('content-type')).toBe(
      'text/javascript; charset=utf-8',
    );
  });

  it("answers 404 for a file that is not the console's, and 422 for a name that is not a file name", async () => {
    expect((await fetch(`${app.url}/console/assets/nothing.js`)).status).toBe(404);
    expect((await fetch(`${app.url}/console/assets/index.html`)).status).toBe(422);
    expect((await fetch(`${app.url}/console/assets/..%2Fsdk%2Fherald.js`)).status).toBe(422);
  });

  it('sandboxes the preview frame under its own policy, framable only by the console', async () => {
    const res = await fetch(`${app.url}/console/frame/preview`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain('sandbox allow-scripts');
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("frame-ancestors 'self'");
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
  });
});

// Tenants' browser origins in real Chromium: a page served from another origin than Herald's (its own
// HTTP server on loopback) loads the client from Herald and reads the inbox with its tenant's contact
// token, preflight included; with another tenant's token the browser withholds the answer; the
// console's sign-in refuses the page's origin. The install lists no origin of its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/app.ts';
import { launchChromium, type ChromiumSession } from '../support/browser.ts';
import { sqlOne } from '../support/fixtures.ts';
import { createInboxContact, seedInboxItems, type InboxContact } from './fixtures.ts';

/** Defined inside test/api/pages/browser.test.ts, which runs the browser suites one at a time (one Chromium). */
export function corsSuite(): void {
  describe("a tenant's browser origins in Chromium", () => {
    let app: TestApp;
    let site: Server;
    let siteOrigin: string;
    let browser: ChromiumSession;
    let page: Page;
    let own: InboxContact;
    let other: InboxContact;

    beforeAll(async () => {
      app = await startTestApp({ config: { corsOrigins: [] } });
      site = createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<!doctype html><title>The tenant site</title>');
      });
      await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
      const address = site.address();
      siteOrigin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      own = await createInboxContact(app, 'ext-own');
      other = await createInboxContact(app, 'ext-other');
      await seedInboxItems(app, own, [{ title: 'Hello from the tenant', body: 'Read cross-origin.' }]);
      await seedInboxItems(app, other, [{ title: 'Not for this page', body: '...' }]);
      const owner = await sqlOne<{ user_id: string }>(
        app,
        `SELECT user_id FROM memberships WHERE tenant_id = $1 AND role = 'owner'`,
        [own.tenantId],
      );
      const set = await app.request('PATCH', `/v1/auth/tenants/${own.tenantId}`, {
        token: app.runtime.tokens.sign('access', owner!.user_id, own.tenantId, 3600, app.runtime.clock.now()),
        body: { cors_origins: [siteOrigin] },
      });
      expect(set.status, set.text).toBe(200);
      browser = await launchChromium();
      page = await browser.context.newPage();
      await page.goto(`${siteOrigin}/`);
    });

    afterAll(async () => {
      await browser?.close();
      await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
      await app?.close();
    });

    /** fetch() from the page: the status it could read, or the browser's refusal. */
    const fetchFromPage = (path: string, init: { method?: string; token?: string; body?: unknown }) =>
      page.evaluate(
        async ([url, method, token, body]) => {
          try {
            const headers: Record<string, string> = { 'content-type': 'application/json' };
            if (token) headers.authorization = `Bearer ${token}`;
            const res = await fetch(url, {
              method,
              headers,
              body: body === undefined ? undefined : JSON.stringify(body),
            });
            return { status: res.status, text: await res.text() };
          } catch (error) {
            return { refused: String(error) };
          }
        },
        [`${app.url}${path}`, init.method ?? 'GET', init.token ?? '', init.body] as const,
      );

    it("reads the inbox with the tenant's own contact token, through the client loaded from Herald", async () => {
      // A string, so the test runner does not rewrite the page's dynamic import.
      const titles = await page.evaluate(`(async () => {
        const { createHerald } = await import(${JSON.stringify(`${app.url}/sdk/herald.js`)});
        const herald = createHerald({
          url: ${JSON.stringify(app.url)},
          getToken: async () => (${JSON.stringify({ token: own.token, expires_in: 3600, contact_id: own.id })}),
        });
        return (await herald.listNotifications()).items.map((i) => i.title);
      })()`);
      expect(titles).toEqual(['Hello from the tenant']);
      const direct = await fetchFromPage(`/v1/contacts/${own.id}/notifications`, { token: own.token });
      expect(direct).toMatchObject({ status: 200 });
    });

    it("withholds the answer to another tenant's token, and the console's routes", async () => {
      const foreign = await fetchFromPage(`/v1/contacts/${other.id}/notifications`, { token: other.token });
      expect(foreign).toEqual({ refused: expect.stringContaining('Failed to fetch') });
      const login = await fetchFromPage('/v1/auth/login', {
        method: 'POST',
        body: { email: 'nobody@example.test', password: 'x' },
      });
      expect(login).toEqual({ refused: expect.stringContaining('Failed to fetch') });
      const keys = await fetchFromPage('/v1/api-keys', { token: own.serviceKey });
      expect(keys).toEqual({ refused: expect.stringContaining('Failed to fetch') });
    });
  });
}

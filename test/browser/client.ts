// The browser client (/sdk/herald.js) in real Chromium against a real Herald. The page's getToken
// calls the test, which plays the tenant's backend: it mints contact tokens through
// POST /v1/contacts/tokens with its service key. Covers token renewal (before expiry, from
// expires_in, and after a 401), paging, marks, preferences, language, the web push key and
// subscription registration, and a stream that outlives its token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/app.ts';
import { launchChromium, type ChromiumSession } from '../support/browser.ts';
import {
  createInboxContact,
  mintContactToken,
  seedInboxItems,
  triggerNotification,
  type InboxContact,
} from './fixtures.ts';

const TOKEN_TTL = 4;

/** Defined inside test/api/pages/browser.test.ts, which runs the browser suites one after another (one Chromium at a time). */
export function clientSuite(): void {
  describe('herald.js client in Chromium', () => {
    let app: TestApp;
    let browser: ChromiumSession;
    let page: Page;
    let contact: InboxContact;
    /** What the page's getToken received from "the backend", in order. */
    const issued: string[] = [];
    let nextTokenOverride: string | null = null;

    beforeAll(async () => {
      // Short contact tokens so renewal and stream expiry happen within the test.
      app = await startTestApp({ config: { contactTokenTtlSeconds: TOKEN_TTL } });
      contact = await createInboxContact(app, 'ext-client');
      await seedInboxItems(
        app,
        contact,
        Array.from({ length: 5 }, (_, i) => ({ title: `Item ${i + 1}`, body: `Body ${i + 1}` })),
      );
      browser = await launchChromium();
      await browser.context.grantPermissions(['notifications'], { origin: app.url });
      page = await browser.context.newPage();
      await page.exposeFunction('backendToken', async () => {
        if (nextTokenOverride) {
          const token = nextTokenOverride;
          nextTokenOverride = null;
          issued.push(token);
          return { token, expires_in: 3600, contact_id: contact.id };
        }
        const minted = await mintContactToken(app, contact.serviceKey, contact.externalId);
        issued.push(minted.token);
        return minted;
      });
      await page.goto(`${app.url}/demo`);
      // A string, so the test runner does not rewrite the page's dynamic import.
      await page.evaluate(`(async () => {
        const { createHerald } = await import('/sdk/herald.js');
        // The client's clock runs with real time plus an offset the tests move forward.
        window.offset = 0;
        window.tokenCalls = 0;
        window.herald = createHerald({ url: location.origin, getToken: () => (window.tokenCalls++, window.backendToken()), now: () => Date.now() + window.offset });
      })()`);
    });

    afterAll(async () => {
      await browser?.close();
      await app?.close();
    });

    const serverToken = async () => (await mintContactToken(app, contact.serviceKey, contact.externalId)).token;

    const run = <T>(fn: string, arg?: unknown): Promise<T> =>
      page.evaluate(
        ([source, value]) => {
          const w = window as unknown as Record<string, any>;
          return new Function('herald', 'value', 'w', `return (async () => { ${source} })()`)(w.herald, value, w);
        },
        [fn, arg] as const,
      );

    it('pages through the inbox with the cursor, newest first, without repeats', async () => {
      const titles = await run<string[]>(`
        const seen = [];
        let cursor;
        do {
          const page = await herald.listNotifications({ limit: 2, cursor });
          seen.push(...page.items.map((i) => i.title));
          cursor = page.next_cursor;
        } while (cursor);
        return seen;`);
      expect(titles).toEqual(['Item 5', 'Item 4', 'Item 3', 'Item 2', 'Item 1']);
      expect(issued).toHaveLength(1);
    });

    it('asks the backend again shortly before the token expires (from expires_in), not before', async () => {
      await run(`w.offset += 1000; await herald.getCounts();`);
      expect(issued).toHaveLength(1);
      // The margin is 10% of the lifetime, at least 5 s, at most half of it: 2 s for 4 s tokens.
      await run(`w.offset += 1000; await herald.getCounts();`);
      expect(issued).toHaveLength(2);
    });

    it('renews the token and retries once when Herald answers 401', async () => {
      nextTokenOverride = 'not-a-valid-token.eyJzdWIiOiJ4In0.sig';
      await run(`w.offset += 3600 * 1000;`); // force a renewal, which the backend answers with a bad token
      const counts = await run<{ unread: number }>(`return herald.getCounts();`);
      expect(counts.unread).toBe(5);
      expect(issued.slice(-2)[0]).toBe('not-a-valid-token.eyJzdWIiOiJ4In0.sig');
    });

    it('marks read, unread, seen, archived and all read; the counts follow the server', async () => {
      const result = await run<{
        read: string | null;
        unread: string | null;
        seen: string | null;
        archived: string | null;
        counts: number[];
        updated: number;
      }>(`
        const page = await herald.listNotifications({ limit: 5 });
        const [a, b] = page.items;
        const read = (await herald.markRead(a.id)).read_at;
        const c1 = (await herald.getCounts()).unread;
        const unread = (await herald.markUnread(a.id)).read_at;
        const seen = (await herald.markSeen(b.id)).seen_at;
        const archived = (await herald.archive(b.id)).archived_at;
        const c2 = (await herald.getCounts()).unread;
        const { updated } = await herald.markAllRead();
        const c3 = (await herald.getCounts()).unread;
        await herald.unarchive(b.id);
        return { read, unread, seen, archived, counts: [c1, c2, c3], updated };`);
      expect(result.read).not.toBeNull();
      expect(result.unread).toBeNull();
      expect(result.seen).not.toBeNull();
      expect(result.archived).not.toBeNull();
      expect(result.counts).toEqual([4, 4, 0]);
      const server = await app.request('GET', `/v1/contacts/${contact.id}/notifications?status=unread`, {
        token: await serverToken(),
      });
      expect(server.body.unread_count).toBe(0);
    });

    it('reads and sets preferences and the language; errors carry status and code', async () => {
      const result = await run<{
        before: boolean;
        after: boolean;
        language: string;
        error: { status: number; code: string };
      }>(`
        const find = (m) => m.preferences.find((p) => p.type === 'build_status' && p.channel === 'email');
        const before = find(await herald.getPreferences()).enabled;
        const after = find(await herald.setPreference('build_status', 'email', true)).enabled;
        const language = (await herald.setLanguage('de')).language;
        let error;
        try { await herald.setPreference('build_status', 'fax', true); } catch (e) { error = { status: e.status, code: e.code, name: e.name }; }
        return { before, after, language, error };`);
      expect(result).toEqual({
        before: false,
        after: true,
        language: 'de',
        error: { status: 422, code: 'validation_error', name: 'HeraldError' },
      });
    });

    it('registers a web push subscription with Herald and removes it again', async () => {
      const configured = await app.request('PUT', '/v1/push-transport/webpush', {
        token: contact.serviceKey,
        body: { subject: 'mailto:ops@example.test' },
      });
      expect(configured.status).toBe(200);
      const key = await app.request('GET', '/v1/web-push/public-key', { token: contact.serviceKey });
      // Headless Chromium has no push service to subscribe with, so the registration's pushManager is
      // a stand-in that records what the client asks for; Herald's side is real.
      const result = await run<{
        key: string;
        asked: { userVisibleOnly: boolean; applicationServerKey: number[] };
        record: { id: string; endpoint: string };
        removed: boolean;
        unsubscribed: boolean;
      }>(`
        const toB64 = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
        const p256dh = toB64([4, ...Array.from({ length: 64 }, (_, i) => i + 1)]);
        const auth = toB64(Array.from({ length: 16 }, (_, i) => i + 100));
        let current = null;
        let asked = null;
        let unsubscribed = false;
        const subscription = (options) => ({
          options,
          toJSON: () => ({ endpoint: 'http://127.0.0.1:9/push/abc', keys: { p256dh, auth } }),
          unsubscribe: async () => { unsubscribed = true; current = null; return true; },
        });
        const registration = { pushManager: {
          getSubscription: async () => current,
          subscribe: async (options) => { asked = options; current = subscription(options); return current; },
        } };
        const key = await herald.getWebPushPublicKey();
        const record = await herald.registerWebPush(registration);
        const removed = await herald.unregisterWebPush(registration);
        return { key, asked: { userVisibleOnly: asked.userVisibleOnly, applicationServerKey: Array.from(asked.applicationServerKey) }, record, removed, unsubscribed };`);
      expect(result.key).toBe(key.body.public_key);
      expect(result.asked.userVisibleOnly).toBe(true);
      expect(Buffer.from(result.asked.applicationServerKey).toString('base64url')).toBe(key.body.public_key);
      expect(result.record.endpoint).toBe('http://127.0.0.1:9/push/abc');
      expect(result.removed).toBe(true);
      expect(result.unsubscribed).toBe(true);
      const left = await app.request('GET', `/v1/contacts/${contact.id}/push-subscriptions`, {
        token: contact.serviceKey,
      });
      expect(left.status).toBe(200);
      expect(left.body).toEqual([]);
    });

    it('keeps the stream live past the token expiry: reconnects with a fresh token and misses nothing', async () => {
      const before = issued.length;
      await run(`
        w.offset += 3600 * 1000; // the stream starts with a fresh token
        w.events = [];
        w.states = [];
        w.callsAt = [];
        w.stream = herald.connect({
          onNotification: (item) => w.events.push(item.title),
          onCounts: (counts) => w.events.push('counts:' + counts.unread),
          onStateChange: (state) => { w.states.push(state); w.callsAt.push(w.tokenCalls); },
        }, { minRetryMs: 200 });`);
      await expect.poll(() => run<string[]>(`return w.states;`), { timeout: 10_000 }).toContain('open');
      // The server ends the stream when its token expires (4 s); the client renews and reconnects.
      await expect
        .poll(() => run<string[]>(`return w.states;`), { timeout: 15_000 })
        .toEqual(['connecting', 'open', 'reconnecting', 'open']);
      expect(issued.length).toBeGreaterThan(before);
      // The next token was fetched shortly before the old one expired, not after the stream dropped.
      const [, openedWith, droppedWith] = await run<number[]>(`return w.callsAt;`);
      expect(droppedWith).toBeGreaterThan(openedWith!);
      await triggerNotification(app, contact, { title: 'After renewal', body: 'Still live.' });
      await expect.poll(() => run<string[]>(`return w.events;`), { timeout: 10_000 }).toContain('After renewal');
      const server = await app.request('GET', `/v1/contacts/${contact.id}/notifications?limit=1`, {
        token: await serverToken(),
      });
      await expect
        .poll(() => run<string | undefined>(`return w.events.filter((e) => e.startsWith('counts:')).at(-1);`), {
          timeout: 5_000,
        })
        .toBe(`counts:${server.body.unread_count}`);
      // reconnect() reconnects at once, resuming after the last event: nothing is delivered twice.
      await run(`w.stream.reconnect();`);
      await expect
        .poll(() => run<number>(`return w.states.filter((s) => s === 'open').length;`), { timeout: 5_000 })
        .toBe(3);
      expect((await run<string[]>(`return w.events;`)).filter((e) => e === 'After renewal')).toHaveLength(1);
      await run(`w.stream.close();`);
      expect(await run<string>(`return w.stream.state;`)).toBe('closed');
    });
  });
}

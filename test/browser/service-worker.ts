// The web push service worker (/sdk/herald-sw.js) in real Chromium: registered on Herald's origin,
// it receives push messages (delivered through the DevTools protocol, as the push service would hand
// them over after decryption) carrying the exact payload Herald's web push transport encrypts, and
// shows the notification: checked both by recording the worker's showNotification calls and by
// registration.getNotifications(); clicking hands the action URL to a window.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CDPSession, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/app.ts';
import { launchChromium, type ChromiumSession } from '../support/browser.ts';
import { webPushPayload } from '../../server/channels/web-push/provider.ts';

/** Defined inside test/api/pages/browser.test.ts, which runs the browser suites one after another (one Chromium at a time). */
export function serviceWorkerSuite(): void {
  describe('herald-sw.js in Chromium', () => {
    let app: TestApp;
    let browser: ChromiumSession;
    let page: Page;
    let cdp: CDPSession;
    let registrationId: string;

    beforeAll(async () => {
      app = await startTestApp();
      browser = await launchChromium();
      await browser.context.grantPermissions(['notifications'], { origin: app.url });
      page = await browser.context.newPage();
      cdp = await browser.context.newCDPSession(page);
      // Ready for pushes: the registration exists and its worker version is activated and running.
      const registered = new Promise<string>((resolve) => {
        let id: string | null = null;
        let activated = false;
        const settle = () => id && activated && resolve(id);
        cdp.on('ServiceWorker.workerRegistrationUpdated', ({ registrations }) => {
          const mine = registrations.find((r) => r.scopeURL === `${app.url}/` && !r.isDeleted);
          if (mine) id = mine.registrationId;
          settle();
        });
        cdp.on('ServiceWorker.workerVersionUpdated', ({ versions }) => {
          if (
            versions.some(
              (v) =>
                v.scriptURL.endsWith('/sdk/herald-sw.js') && v.status === 'activated' && v.runningStatus === 'running',
            )
          )
            activated = true;
          settle();
        });
      });
      await cdp.send('ServiceWorker.enable');
      await page.goto(`${app.url}/demo`);
      await page.evaluate(async () => {
        await navigator.serviceWorker.register('/sdk/herald-sw.js', { scope: '/' });
        await navigator.serviceWorker.ready;
      });
      registrationId = await registered;
      // Record every showNotification call the worker makes (its arguments, in order), next to what
      // registration.getNotifications() lists.
      const worker = browser.context.serviceWorkers()[0] ?? (await browser.context.waitForEvent('serviceworker'));
      // Headless Chromium sometimes leaves the first notification an origin shows out of
      // getNotifications(): warm it up with a probe that must be listed, then closed, before any push.
      await worker.evaluate(async () => {
        const registration = (globalThis as unknown as { registration: ServiceWorkerRegistration }).registration;
        const listed = async (present: boolean) => {
          for (let i = 0; i < 50; i += 1) {
            if ((await registration.getNotifications({ tag: 'probe' })).length > 0 === present) return true;
            if (present && i % 10 === 0) await registration.showNotification('probe', { tag: 'probe' });
            await new Promise((r) => setTimeout(r, 100));
          }
          throw new Error(`the probe notification is ${present ? 'never listed' : 'never closed'}`);
        };
        await listed(true);
        for (const n of await registration.getNotifications({ tag: 'probe' })) n.close();
        await listed(false);
      });
      await worker.evaluate(() => {
        const scope = globalThis as unknown as { registration: ServiceWorkerRegistration; shownCalls: unknown[] };
        const show = scope.registration.showNotification.bind(scope.registration);
        scope.shownCalls = [];
        scope.registration.showNotification = (title: string, options?: NotificationOptions) => {
          scope.shownCalls.push({ title, options });
          return show(title, options);
        };
      });
    });

    afterAll(async () => {
      await browser?.close();
      await app?.close();
    });

    const shown = () =>
      page.evaluate(async () => {
        const registration = await navigator.serviceWorker.ready;
        const list = await registration.getNotifications();
        return list.map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data as Record<string, unknown> }));
      });

    const push = (data: string) =>
      cdp.send('ServiceWorker.deliverPushMessage', { origin: app.url, registrationId, data });

    const calls = () =>
      browser.context
        .serviceWorkers()[0]!
        .evaluate(
          () =>
            (globalThis as unknown as { shownCalls: Array<{ title: string; options: NotificationOptions }> })
              .shownCalls,
        );

    /** Delivers one push and waits until the worker has shown it (pushes go one at a time). */
    const pushAndWait = async (data: string) => {
      const before = (await calls()).length;
      await push(data);
      await expect.poll(async () => (await calls()).length, { timeout: 10_000 }).toBe(before + 1);
      return (await calls())[before]!;
    };

    it('shows the notification of a push carrying the payload Herald sends', async () => {
      const payload = webPushPayload({
        title: 'Order shipped',
        body: 'Your order #881 is on its way.',
        data: { event_id: '01a1ffa9-0000-7000-8000-000000000001', type: 'order_shipped', order_id: '881' },
        action_url: 'https://shop.example/orders/881',
      });
      const call = await pushAndWait(payload);
      const data = {
        event_id: '01a1ffa9-0000-7000-8000-000000000001',
        type: 'order_shipped',
        order_id: '881',
        action_url: 'https://shop.example/orders/881',
      };
      expect(call).toEqual({
        title: 'Order shipped',
        options: { body: 'Your order #881 is on its way.', data, tag: '01a1ffa9-0000-7000-8000-000000000001' },
      });
      await expect.poll(shown, { timeout: 10_000 }).toEqual([
        {
          title: 'Order shipped',
          body: 'Your order #881 is on its way.',
          tag: '01a1ffa9-0000-7000-8000-000000000001',
          data,
        },
      ]);
    });

    it('tells open pages about the push, and replaces a repeated push of the same event', async () => {
      await page.evaluate(() => {
        (window as unknown as { heraldMessages: unknown[] }).heraldMessages = [];
        navigator.serviceWorker.addEventListener('message', (event) =>
          (window as unknown as { heraldMessages: unknown[] }).heraldMessages.push(event.data),
        );
      });
      const payload = webPushPayload({
        title: 'Order shipped (again)',
        body: 'Retried.',
        data: { event_id: '01a1ffa9-0000-7000-8000-000000000001' },
        action_url: null,
      });
      await pushAndWait(payload);
      await expect
        .poll(async () => (await shown()).map((n) => n.title), { timeout: 10_000 })
        .toEqual(['Order shipped (again)']);
      // Only this push's messages: under load, the page can still receive the previous test's after
      // the listener above is added.
      await expect
        .poll(
          async () =>
            (
              await page.evaluate(
                () => (window as unknown as { heraldMessages: Array<{ title?: string }> }).heraldMessages,
              )
            ).filter((m) => m.title === 'Order shipped (again)'),
          { timeout: 5_000 },
        )
        .toEqual([
          {
            type: 'herald:push',
            title: 'Order shipped (again)',
            data: { event_id: '01a1ffa9-0000-7000-8000-000000000001', action_url: null },
          },
        ]);
    });

    it('never carries an unsafe action URL, and shows a push that is not JSON as its text', async () => {
      const sneaky = await pushAndWait(
        webPushPayload({ title: 'Sneaky', body: 'x', data: { event_id: 'e-2' }, action_url: 'javascript:alert(1)' }),
      );
      expect(sneaky.options.data).toEqual({ event_id: 'e-2', action_url: null });
      const plain = await pushAndWait('plain text from elsewhere');
      expect(plain).toEqual({
        title: 'New notification',
        options: { body: 'plain text from elsewhere', data: { action_url: null } },
      });
      await expect.poll(async () => (await shown()).length, { timeout: 10_000 }).toBe(3);
    });

    it('on click closes the notification and focuses the window already at the action URL, else opens it', async () => {
      const demoUrl = `${app.url}/demo`;
      await pushAndWait(
        webPushPayload({ title: 'Open demo', body: 'x', data: { event_id: 'e-3' }, action_url: demoUrl }),
      );
      await pushAndWait(
        webPushPayload({
          title: 'Open shop',
          body: 'y',
          data: { event_id: 'e-4' },
          action_url: 'https://shop.example/orders/1',
        }),
      );
      // The two this test clicks are listed (not a count of every notification so far: under load,
      // headless Chromium has left one of the earlier tests' out of the list).
      await expect
        .poll(
          async () =>
            (await shown())
              .map((n) => n.tag)
              .filter((tag) => tag === 'e-3' || tag === 'e-4')
              .sort(),
          { timeout: 10_000 },
        )
        .toEqual(['e-3', 'e-4']);
      const worker = browser.context.serviceWorkers()[0]!;
      // Outside a real click Chromium refuses focus() and openWindow() (no user activation); which one
      // was refused shows which path the handler took.
      const outcome = await worker.evaluate(
        async (tags) => {
          const scope = globalThis as unknown as {
            registration: ServiceWorkerRegistration;
            heraldHandleClick: (n: Notification) => Promise<unknown>;
          };
          const results: string[] = [];
          for (const tag of tags) {
            const [notification] = await scope.registration.getNotifications({ tag });
            try {
              await scope.heraldHandleClick(notification!);
              results.push('done');
            } catch (error) {
              results.push(String((error as Error).message));
            }
          }
          return results;
        },
        ['e-3', 'e-4'],
      );
      expect(outcome[0]).toMatch(/focus/i);
      expect(outcome[1]).toMatch(/open a window/i);
      expect((await shown()).map((n) => n.tag)).not.toContain('e-3');
    });
  });
}

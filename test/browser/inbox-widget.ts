// The browser SDK in real Chromium against a real Herald: the demo page connects <herald-inbox> with
// a contact token; the badge shows the server's unread count; a notification triggered during the
// test (POST /v1/notifications, delivered by the worker) arrives live; clicking an item marks it read on the server; after the connection drops, the
// reconnect (Last-Event-ID) replays what was missed and the badge equals the server's count again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/app.ts';
import { launchChromium, startTcpRelay, type ChromiumSession, type TcpRelay } from '../support/browser.ts';
import { createInboxContact, seedInboxItems, triggerNotification, type InboxContact } from './fixtures.ts';

/** Defined inside test/api/pages/browser.test.ts, which runs the browser suites one after another (one Chromium at a time). */
export function inboxWidgetSuite(): void {
  describe('<herald-inbox> in Chromium', () => {
    let app: TestApp;
    let browser: ChromiumSession;
    let relay: TcpRelay;
    let contact: InboxContact;
    let page: Page;
    const pageErrors: string[] = [];

    beforeAll(async () => {
      app = await startTestApp();
      relay = await startTcpRelay(new URL(app.url));
      contact = await createInboxContact(app, 'ext-widget');
      await seedInboxItems(app, contact, [
        { title: 'Welcome to Acme', body: 'Thanks for signing up.' },
        {
          title: 'Your invoice is ready',
          body: 'Invoice #1042 for November.',
          action_url: `${relay.url}/demo#invoice-1042`,
        },
        { title: 'Password changed', body: 'If this was not you, contact support.', read: true },
        { title: 'Order shipped', body: 'Your order #881 is on its way.' },
      ]);
      browser = await launchChromium();
      page = await browser.context.newPage();
      page.on('pageerror', (error) => pageErrors.push(error.message));
      page.on('console', (message) => {
        // Network failures while the relay is down are expected; script errors are not.
        if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
          pageErrors.push(message.text());
      });
    });

    afterAll(async () => {
      await browser?.close();
      await relay?.close();
      await app?.close();
    });

    const badge = () => page.locator('herald-inbox .badge');
    const items = () => page.locator('herald-inbox li.item');
    const serverInbox = async () => {
      const res = await app.request('GET', `/v1/contacts/${contact.id}/notifications?limit=100`, {
        token: contact.token,
      });
      expect(res.status).toBe(200);
      return res.body as { items: Array<{ id: string; title: string; read_at: string | null }>; unread_count: number };
    };

    it("shows the CLI's setup with the origin the page is served from (here the relay's port)", async () => {
      await page.goto(`${relay.url}/demo`);
      const setup = await page.locator('ol.steps pre code').first().textContent();
      expect(setup).toContain(`export HERALD_URL=${relay.url} HERALD_API_KEY=sk_`);
      expect(setup).not.toContain(new URL(app.url).port);
      expect(setup).not.toContain('8025');
    });

    it('renders the bell with the unread count from the server', async () => {
      await page.goto(`${relay.url}/demo`);
      await page.fill('#token', contact.token);
      await page.click('#connect-button');
      await expect.poll(() => badge().textContent(), { timeout: 10_000 }).toBe('3');
      expect((await serverInbox()).unread_count).toBe(3);
      await expect
        .poll(() => page.locator('herald-inbox').getAttribute('data-state'), { timeout: 10_000 })
        .toBe('open');
      expect(await page.locator('herald-inbox .bell').getAttribute('aria-label')).toBe('Notifications, 3 unread');

      // Pages of three: the fourth item comes with "Load more".
      await page.locator('herald-inbox').evaluate((el) => el.setAttribute('page-size', '3'));
      await page.locator('herald-inbox .bell').click();
      await expect.poll(() => items().count(), { timeout: 10_000 }).toBe(3);
      // Focus moved into the popover, on the first item.
      expect(
        await page.evaluate(() => document.querySelector('herald-inbox')!.shadowRoot!.activeElement?.className),
      ).toBe('open');
      const more = page.locator('herald-inbox [data-action="more"]');
      expect(await more.isVisible()).toBe(true);
      await more.click();
      await expect.poll(() => items().count(), { timeout: 10_000 }).toBe(4);
      expect(await more.isHidden()).toBe(true);
      expect(await page.locator('herald-inbox .bell').getAttribute('aria-expanded')).toBe('true');
      // Newest first; unread ones marked.
      expect(await items().nth(0).locator('.title').textContent()).toBe('Order shipped');
      expect(await page.locator('herald-inbox li.item.unread').count()).toBe(3);
    });

    it('shows a notification triggered during the test live, with the badge rising', async () => {
      await triggerNotification(app, contact, { title: 'Build 2718 passed', body: 'All 412 tests green.' });
      await expect.poll(() => badge().textContent(), { timeout: 10_000 }).toBe('4');
      await expect
        .poll(() => items().nth(0).locator('.title').textContent(), { timeout: 10_000 })
        .toBe('Build 2718 passed');
      expect(await items().count()).toBe(5);
      // Screen readers hear about it through the live region.
      await expect
        .poll(() => page.locator('herald-inbox [data-live]').textContent(), { timeout: 5_000 })
        .toBe('New notification: Build 2718 passed');

      mkdirSync('test-results', { recursive: true });
      await page.screenshot({ path: 'test-results/herald-inbox-widget.png' });
    });

    it('marks an item read on click, and the server agrees; its action URL opens', async () => {
      const target = items().filter({ hasText: 'Your invoice is ready' });
      await target.locator('button.open').click();
      await expect.poll(() => new URL(page.url()).hash, { timeout: 10_000 }).toBe('#invoice-1042');
      await expect.poll(() => badge().textContent(), { timeout: 10_000 }).toBe('3');
      await expect.poll(async () => (await target.getAttribute('class')) ?? '', { timeout: 5_000 }).toBe('item');
      const inbox = await serverInbox();
      expect(inbox.unread_count).toBe(3);
      expect(inbox.items.find((i) => i.title === 'Your invoice is ready')!.read_at).not.toBeNull();
    });

    it('replays what was missed after the connection drops, with counts equal to the server', async () => {
      const before = relay.connections;
      relay.down();
      await expect
        .poll(() => page.locator('herald-inbox').getAttribute('data-state'), { timeout: 10_000 })
        .toBe('reconnecting');
      // While the browser is cut off: two new notifications, and one item read elsewhere.
      await triggerNotification(app, contact, { title: 'Missed one', body: 'Delivered while offline.' });
      await expect.poll(async () => (await serverInbox()).unread_count, { timeout: 15_000 }).toBe(4);
      await triggerNotification(app, contact, { title: 'Missed two', body: 'Also delivered while offline.' });
      await expect.poll(async () => (await serverInbox()).unread_count, { timeout: 15_000 }).toBe(5);
      const welcome = (await serverInbox()).items.find((i) => i.title === 'Welcome to Acme')!;
      const patched = await app.request('PATCH', `/v1/contacts/${contact.id}/notifications/${welcome.id}`, {
        token: contact.token,
        body: { read: true },
      });
      expect(patched.status).toBe(200);
      relay.up();

      const expected = (await serverInbox()).unread_count;
      expect(expected).toBe(4);
      await expect
        .poll(() => page.locator('herald-inbox').getAttribute('data-state'), { timeout: 15_000 })
        .toBe('open');
      await expect.poll(() => badge().textContent(), { timeout: 10_000 }).toBe(String(expected));
      await expect.poll(() => items().nth(0).locator('.title').textContent(), { timeout: 10_000 }).toBe('Missed two');
      expect(await items().nth(1).locator('.title').textContent()).toBe('Missed one');
      expect(await items().filter({ hasText: 'Welcome to Acme' }).getAttribute('class')).toBe('item');
      expect(relay.connections).toBeGreaterThan(before);
      expect(
        await page.evaluate(
          () => (document.querySelector('herald-inbox') as unknown as { unreadCount: number }).unreadCount,
        ),
      ).toBe(expected);
    });

    it('marks all read from the popover, and the server agrees', async () => {
      await page.locator('herald-inbox [data-action="read-all"]').click();
      await expect.poll(() => badge().isHidden(), { timeout: 10_000 }).toBe(true);
      expect((await serverInbox()).unread_count).toBe(0);
      expect(await page.locator('herald-inbox li.item.unread').count()).toBe(0);
    });

    it('is keyboard operable: arrows move through items, Escape closes and returns focus to the bell', async () => {
      const active = () =>
        page.evaluate(() => document.querySelector('herald-inbox')!.shadowRoot!.activeElement?.textContent ?? null);
      await page.locator('herald-inbox li.item button.open').first().focus();
      await page.keyboard.press('ArrowDown');
      expect(await active()).toContain('Missed one');
      await page.keyboard.press('End');
      expect(await active()).toContain('Welcome to Acme');
      await page.keyboard.press('Home');
      expect(await active()).toContain('Missed two');
      await page.keyboard.press('Escape');
      expect(await page.locator('herald-inbox .panel').isHidden()).toBe(true);
      expect(
        await page.evaluate(() => document.querySelector('herald-inbox')!.shadowRoot!.activeElement?.className),
      ).toBe('bell');
    });

    it('toggles a preference in the panel, and the server agrees; mandatory types are locked', async () => {
      await page.locator('herald-inbox .bell').click();
      await page.locator('herald-inbox [data-action="prefs"]').click();
      const email = page.locator('herald-inbox input[data-type="build_status"][data-channel="email"]');
      const inbox = page.locator('herald-inbox input[data-type="build_status"][data-channel="inbox"]');
      await expect.poll(() => inbox.isChecked(), { timeout: 10_000 }).toBe(true);
      expect(await email.isChecked()).toBe(false);
      expect(
        await page.locator('herald-inbox input[data-type="account_security"][data-channel="email"]').isDisabled(),
      ).toBe(true);
      expect(await inbox.getAttribute('aria-label')).toBe('Build status: In-app');
      await page.screenshot({ path: 'test-results/herald-inbox-preferences.png' });

      await inbox.click();
      const saved = async () => {
        const res = await app.request('GET', `/v1/contacts/${contact.id}/preferences`, { token: contact.token });
        return res.body.preferences.find(
          (p: { type: string; channel: string }) => p.type === 'build_status' && p.channel === 'inbox',
        );
      };
      await expect
        .poll(saved, { timeout: 10_000 })
        .toEqual(expect.objectContaining({ enabled: false, source: 'contact' }));
      // Re-rendered from the server's matrix, with focus kept on the same switch.
      const focused = () =>
        inbox.evaluate(
          (el) => el === (el.getRootNode() as ShadowRoot).activeElement && !(el as HTMLInputElement).disabled,
        );
      await expect.poll(focused, { timeout: 10_000 }).toBe(true);
      expect(await inbox.isChecked()).toBe(false);
      await page.keyboard.press('Escape');
      expect(pageErrors).toEqual([]);
    });
  });
}

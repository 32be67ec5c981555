// The console and the pages the system emails link to, in real Chromium against a real Herald that
// mails through a real SMTP peer: invite -> email -> accept -> signed in (new and existing users, and
// the wrong account), forgot password -> email -> reset -> sign in, verify email, expired and reused
// links; in the console: edit a template and see the preview change, a hostile template that cannot
// run script, an event triggered by the CLI with its deliveries in the activity log, a revoked key.
// Screenshots of the main pages land in .tmp/screenshots/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer.ts';
import { noChromium, launchChromium, recordingPage, type ChromiumSession } from '../../support/browser.ts';
import { titleUnless } from '../../support/skip-reasons.ts';
import { runCli } from '../../support/cli.ts';
import { ManualClock } from '../../../server/base/clock.ts';
import {
  PASSWORD,
  addUser,
  createTenantFixture,
  freshIp,
  requestAs,
  uniqueEmail,
  waitForMail,
  type TenantFixture,
} from '../../support/fixtures.ts';
import type { ReceivedMail } from '../../support/smtp-peer.ts';

const SHOTS = new URL('../.tmp/screenshots/', import.meta.url).pathname;
const NEW_PASSWORD = 'a fresh passphrase 42';

/** The path and query of the link in a system email (its host is the install's publicUrl). */
function linkPathOf(mail: ReceivedMail): string {
  const text = mail.parsed.text ?? '';
  const match = /https?:\/\/[^\s/]+(\/(?:verify-email|reset-password|invitations)[^\s)\]>]*)/.exec(text);
  if (!match) throw new Error(`no link in email: ${text.slice(0, 300)}`);
  return match[1]!;
}

describe.skipIf(noChromium)(titleUnless(noChromium, 'console in Chromium'), { timeout: 60_000 }, () => {
  let app: TestApp;
  let smtp: SmtpPeer;
  let browser: ChromiumSession;
  let acme: TenantFixture;
  const clock = new ManualClock(Date.now());
  const problems: string[] = [];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    smtp = await startSmtpPeer();
    app = await startTestApp({ clock, config: { smtpUrl: smtp.url, trustedProxies: ['127.0.0.1'] } });
    acme = await createTenantFixture(app, 'Acme');
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await smtp?.close();
  });

  /** A fresh tab that records script errors and policy violations. */
  const newPage = () => recordingPage(browser, problems);

  async function shot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
  }

  async function signIn(page: Page, email: string, password = PASSWORD): Promise<void> {
    await page.goto(`${app.url}/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console\//);
  }

  describe('pages the emails link to', () => {
    it('shows the sign-in page and refuses a wrong password in words', async () => {
      const page = await newPage();
      await page.goto(`${app.url}/login`);
      await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true);
      await shot(page, '01-login');
      await page.getByLabel('Email').fill(acme.ownerEmail);
      await page.getByLabel('Password').fill('not the password at all');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('That email and password do not match an account.').waitFor();
      await page.close();
    });

    it('invite -> email -> accept with a new password -> signed in; the link then no longer works', async () => {
      const owner = await newPage();
      await signIn(owner, acme.ownerEmail);
      await owner.goto(`${app.url}/console/members`);
      const invitee = uniqueEmail('invitee');
      const before = smtp.messages.length;
      await owner.getByLabel('Email').fill(invitee);
      await owner.getByRole('button', { name: 'Send invitation' }).click();
      await owner.getByRole('cell', { name: invitee, exact: true }).waitFor();
      await shot(owner, '05-members');
      const link = linkPathOf(await waitForMail(smtp, invitee, /invit/i, before));
      expect(link).toMatch(/^\/invitations\/[A-Za-z0-9_-]{20,}$/);

      const page = await newPage();
      await page.goto(`${app.url}${link}`);
      await page.getByRole('heading', { name: 'Join Acme' }).waitFor();
      await shot(page, '02-invitation');
      await page.getByLabel('New password').fill('short');
      await page.getByLabel('Repeat the password').fill('short');
      await page.getByRole('button', { name: 'Create my account and join' }).click();
      await page.getByText('Choose a password of at least 10 characters.').waitFor();
      await page.getByLabel('New password').fill(NEW_PASSWORD);
      await page.getByLabel('Repeat the password').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Create my account and join' }).click();
      await page.waitForURL(/\/console\/activity/);
      await expect(page.locator('#tenant-switcher option:checked').textContent()).resolves.toBe('Acme');

      const again = await newPage();
      await again.goto(`${app.url}${link}`);
      await again.getByText(/This invitation is no longer valid/).waitFor();
      for (const p of [owner, page, again]) await p.close();
    });

    it('an existing user signs in from the invitation and joins; another account is told it is the wrong one', async () => {
      const other = await createTenantFixture(app, 'Globex');
      const existing = await addUser(app, other.tenantId, 'admin', true);
      const before = smtp.messages.length;
      const invited = await requestAs(app, 'POST', `/v1/auth/tenants/${acme.tenantId}/invitations`, {
        token: acme.ownerToken,
        body: { email: existing.email, role: 'admin' },
      });
      expect(invited.status).toBe(201);
      const link = linkPathOf(await waitForMail(smtp, existing.email, /invit/i, before));

      // Signed in as someone else: the page says so instead of joining.
      const wrong = await newPage();
      await signIn(wrong, other.ownerEmail);
      await wrong.goto(`${app.url}${link}`);
      await wrong.getByRole('button', { name: 'Accept and join Acme' }).click();
      await wrong.getByText(/signed in with a different account/).waitFor();
      await wrong.close();

      const page = await newPage();
      await page.goto(`${app.url}${link}`);
      await page.getByRole('link', { name: `Sign in as ${existing.email}` }).click();
      await page.getByLabel('Email').fill(existing.email);
      await page.getByLabel('Password').fill(existing.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/invitations\//);
      await page.getByRole('button', { name: 'Accept and join Acme' }).click();
      await page.waitForURL(/\/console\//);
      await expect(page.locator('#tenant-switcher option:checked').textContent()).resolves.toBe('Acme');
      await page.close();
    });

    it('says an expired invitation no longer works', async () => {
      const email = uniqueEmail('late');
      const before = smtp.messages.length;
      expect(
        (
          await requestAs(app, 'POST', `/v1/auth/tenants/${acme.tenantId}/invitations`, {
            token: acme.ownerToken,
            body: { email, role: 'admin' },
          })
        ).status,
      ).toBe(201);
      const link = linkPathOf(await waitForMail(smtp, email, /invit/i, before));
      clock.advance(8 * 24 * 3600 * 1000);
      const page = await newPage();
      await page.goto(`${app.url}${link}`);
      await page.getByText(/it may have expired/).waitFor();
      await page.close();
      // Console tokens minted by the fixture follow the test clock: mint the owner's again.
      acme.ownerToken = app.runtime.tokens.sign('access', acme.ownerId, acme.tenantId, 3600, clock.now());
    });

    it('forgot password -> email -> reset -> sign in with the new password; the link works once', async () => {
      const user = await addUser(app, acme.tenantId, 'admin');
      const page = await newPage();
      await page.goto(`${app.url}/login`);
      await page.getByRole('link', { name: 'Forgot your password?' }).click();
      await page.waitForURL(/\/forgot-password$/);
      await shot(page, '03-forgot-password');
      const before = smtp.messages.length;
      await page.getByLabel('Email').fill(user.email);
      await page.getByRole('button', { name: 'Send the link' }).click();
      await page.getByRole('heading', { name: 'Check your email' }).waitFor();
      const link = linkPathOf(await waitForMail(smtp, user.email, /Reset your password/, before));

      await page.goto(`${app.url}${link}`);
      await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
      await shot(page, '04-reset-password');
      await page.getByLabel('New password').fill(NEW_PASSWORD);
      await page.getByLabel('Repeat the password').fill('something else entirely');
      await page.getByRole('button', { name: 'Set the password' }).click();
      await page.getByText('The two passwords are not the same.').waitFor();
      await page.getByLabel('Repeat the password').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Set the password' }).click();
      await page.waitForURL(/\/login\?reset=1/);
      await page.getByText('Your new password is set. Sign in with it.').waitFor();
      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(/\/console\//);

      const reused = await newPage();
      await reused.goto(`${app.url}${link}`);
      await reused.getByText(/expired or has already been used/).waitFor();
      await reused.close();
      await page.close();
    });

    it('says an expired reset link has expired', async () => {
      const user = await addUser(app, acme.tenantId, 'admin');
      const before = smtp.messages.length;
      expect((await requestAs(app, 'POST', '/v1/auth/password-reset', { body: { email: user.email } })).status).toBe(
        202,
      );
      const link = linkPathOf(await waitForMail(smtp, user.email, /Reset your password/, before));
      clock.advance(2 * 3600 * 1000);
      const page = await newPage();
      await page.goto(`${app.url}${link}`);
      await page.getByRole('heading', { name: 'This link no longer works' }).waitFor();
      await page.close();
    });

    it('verifies an email address; the link then says it was used; an expired one says so', async () => {
      const email = uniqueEmail('verify');
      let before = smtp.messages.length;
      expect(
        (
          await requestAs(app, 'POST', '/v1/auth/register', {
            body: { email, password: PASSWORD, tenant_name: 'Initech' },
          })
        ).status,
      ).toBe(201);
      const link = linkPathOf(await waitForMail(smtp, email, /onfirm|erif/i, before));
      const page = await newPage();
      await page.goto(`${app.url}${link}`);
      await page.getByRole('heading', { name: 'Your email address is confirmed' }).waitFor();
      await shot(page, '06-verified');
      await page.goto(`${app.url}${link}`);
      await page.getByText(/has already been used or is not valid/).waitFor();

      const late = uniqueEmail('verify-late');
      before = smtp.messages.length;
      expect(
        (
          await requestAs(app, 'POST', '/v1/auth/register', {
            body: { email: late, password: PASSWORD, tenant_name: 'Hooli' },
          })
        ).status,
      ).toBe(201);
      const lateLink = linkPathOf(await waitForMail(smtp, late, /onfirm|erif/i, before));
      clock.advance(49 * 3600 * 1000);
      await page.goto(`${app.url}${lateLink}`);
      await page.getByRole('heading', { name: 'This link has expired' }).waitFor();
      await page.close();
      acme.ownerToken = app.runtime.tokens.sign('access', acme.ownerId, acme.tenantId, 3600, clock.now());
    });
  });

  describe('console', () => {
    let templateId: string;
    const api = (method: string, path: string, body?: unknown) =>
      requestAs(app, method, path, { token: acme.serviceKey, body });

    beforeAll(async () => {
      expect(
        (
          await api('POST', '/v1/notification-types', {
            key: 'order_shipped',
            name: 'Order shipped',
            variables: [{ name: 'order_id', required: true, description: 'Order number' }],
          })
        ).status,
      ).toBe(201);
      const created = await api('POST', '/v1/email-templates', {
        notification_type_key: 'order_shipped',
        subject: 'Order {{ order_id }} shipped',
        content: '<h1>Your order {{ order_id }} is on its way</h1>',
      });
      expect(created.status).toBe(201);
      templateId = created.body.id;
      expect(
        (
          await api('POST', '/v1/inbox-templates', {
            notification_type_key: 'order_shipped',
            title: 'Order {{ order_id }} shipped',
            content: 'It is on its way.',
          })
        ).status,
      ).toBe(201);
    });

    it('edits a template and the sandboxed preview shows the change', async () => {
      const page = await newPage();
      await signIn(page, acme.ownerEmail);
      await page.goto(`${app.url}/console/templates?email=${templateId}`);
      const frame = page.frameLocator('iframe.preview');
      await frame.getByText('Your order Sample order_id is on its way').waitFor();
      await page
        .getByLabel('Content (HTML with {{ placeholders }})')
        .fill('<h1>Packed and sent: {{ order_id }}</h1><p style="color:#4338ca">Thanks!</p>');
      await page.getByLabel('Sample variables (JSON)').fill('{"order_id": "A-1001"}');
      await page.getByRole('button', { name: 'Save and preview' }).click();
      await frame.getByText('Packed and sent: A-1001').waitFor();
      await expect(page.locator('.preview-subject').textContent()).resolves.toContain('Order A-1001 shipped');
      // The email's own inline styles apply inside the frame (polled: a preview that is still being
      // replaced answers an empty style for the element it drops).
      await expect
        .poll(() => frame.locator('p', { hasText: 'Thanks!' }).evaluate((el) => getComputedStyle(el).color), {
          timeout: 10_000,
        })
        .toBe('rgb(67, 56, 202)');
      const stored = await api('GET', `/v1/email-templates/${templateId}`);
      expect(stored.body.content).toContain('Packed and sent');
      await shot(page, '10-templates');
      await page.close();
    });

    it('shows a hostile template without running any of its script', async () => {
      const seen = problems.length;
      const page = await newPage();
      await signIn(page, acme.ownerEmail);
      const hostile =
        '<p>hostile preview</p><script>parent.postMessage("pwned-script", "*")</script>' +
        '<img src="x" onerror="parent.postMessage(\'pwned-onerror\', \'*\')">' +
        '<svg><animate onbegin="parent.postMessage(\'pwned-svg\', \'*\')" attributeName="x" dur="1s"/></svg>' +
        '<a id="js" href="javascript:parent.postMessage(\'pwned-href\', \'*\')">click</a>' +
        "<iframe srcdoc=\"<script>parent.parent.postMessage('pwned-nested', '*')</script>\"></iframe>";
      expect((await api('PUT', `/v1/email-templates/${templateId}`, { content: hostile })).status).toBe(200);
      await page.goto(`${app.url}/console/templates?email=${templateId}`);
      await page.evaluate(() => {
        (window as unknown as { received: string[] }).received = [];
        window.addEventListener('message', (event) => {
          if (typeof event.data === 'string') (window as unknown as { received: string[] }).received.push(event.data);
        });
      });
      const frame = page.frameLocator('iframe.preview');
      await frame.getByText('hostile preview').waitFor();
      await frame
        .locator('#js')
        .click()
        .catch(() => undefined);
      await page.waitForTimeout(800);
      expect(await page.evaluate(() => (window as unknown as { received: string[] }).received)).toEqual([]);
      // The frame is sandboxed to an opaque origin: even a script that ran could not reach the console's token.
      await expect(page.locator('iframe.preview').getAttribute('sandbox')).resolves.toBe('allow-scripts');
      await page.close();
      // What the browser reported meanwhile is the frame's policy refusing the template's handlers and image.
      const reported = problems.splice(seen);
      for (const report of reported) expect(report).toMatch(/violates the following Content Security Policy directive/);
      // The console page itself: scripts only from its own files.
      const res = await fetch(`${app.url}/console/templates`);
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self';");
      expect(res.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    });

    it('shows an event triggered by the CLI, with its deliveries, in the activity log', async () => {
      const sent = await runCli(
        [
          'send',
          '--type',
          'order_shipped',
          '--to',
          'cli-customer',
          '--var',
          'order_id=B-7',
          '--channel',
          'inbox',
          '--wait',
          '--json',
        ],
        {
          env: { HERALD_URL: app.url, HERALD_API_KEY: acme.serviceKey },
        },
      );
      expect(sent.code, sent.stderr).toBe(0);
      const eventId = JSON.parse(sent.stdout).events[0].event_id as string;
      const page = await newPage();
      await signIn(page, acme.ownerEmail);
      const row = page.locator(`tr[data-id="${eventId}"]`);
      await row.waitFor();
      await row.getByRole('button').click();
      const detail = page.locator('#event-detail');
      await detail.getByText(eventId).waitFor();
      await detail.getByRole('cell', { name: 'Inbox' }).waitFor();
      await expect(detail.locator('tbody tr').first().textContent()).resolves.toMatch(/Inbox\s*delivered/);
      await shot(page, '07-activity');
      await page.goto(`${app.url}/console/contacts?external_id=cli-customer`);
      await page.getByRole('heading', { name: 'Preferences' }).waitFor();
      await shot(page, '11-contacts');
      await page.close();
    });

    it('issues a key shown once, and revokes it: it stops working', async () => {
      const page = await newPage();
      await signIn(page, acme.ownerEmail);
      await page.goto(`${app.url}/console/keys`);
      await page.getByLabel('Name').fill('deploy bot');
      await page.getByRole('button', { name: 'Issue key' }).click();
      const key = (await page.locator('#issued-key').textContent())!;
      expect(key).toMatch(/^sk_/);
      expect((await requestAs(app, 'GET', '/v1/api-keys', { token: key })).status).toBe(200);
      await shot(page, '08-keys');
      page.once('dialog', (dialog) => void dialog.accept());
      await page.getByRole('button', { name: 'Revoke deploy bot' }).click();
      await page.getByRole('button', { name: 'Revoke deploy bot' }).waitFor({ state: 'detached' });
      expect((await requestAs(app, 'GET', '/v1/api-keys', { token: key })).status).toBe(401);
      // Reloaded, the key is not shown again.
      await page.reload();
      await page.getByRole('heading', { name: 'Live keys' }).waitFor();
      await expect(page.locator('#issued-key').count()).resolves.toBe(0);
      await page.close();
    });

    it('shows the other sections, and the audit log of what was done', async () => {
      const page = await newPage();
      await signIn(page, acme.ownerEmail);
      for (const [section, heading, name] of [
        ['types', 'Notification types', '12-types'],
        ['brands', 'Brands', '13-brands'],
        ['transports', 'Transports', '14-transports'],
        // Sections of capabilities on this install appear once their routes exist.
        ['webhooks', 'Webhooks', '17-webhooks'],
        ['suppressions', 'Suppressions', '18-suppressions'],
        ['audit', 'Audit log', '09-audit'],
      ] as const) {
        await page.goto(`${app.url}/console/${section}`);
        await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
        await page.locator('.loading').waitFor({ state: 'detached' });
        // A tenant without SMTP settings of its own is told which server sends its email.
        if (section === 'transports')
          await page.getByText(`emails go through the install's SMTP server (${smtp.host}:${smtp.port}`).waitFor();
        await shot(page, name);
      }
      await page.getByText('api_key.delete').first().waitFor();
      // A workflow set from the types page reaches the API.
      await page.goto(`${app.url}/console/types`);
      await page.getByText(/^Workflow \(default/).click();
      await page.getByRole('button', { name: 'Save workflow' }).click();
      await page.getByText('Workflow (3 steps)').waitFor();
      expect((await api('GET', '/v1/notification-types/order_shipped')).body.workflow.steps).toHaveLength(3);
      await page.goto(`${app.url}/console/audit`);
      await page.getByText('email_template.update').first().waitFor();
      // Keyboard: the skip link comes first and leads to the content.
      await page.keyboard.press('Tab');
      await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe('Skip to content');
      await page.close();
    });

    it("warns on a brand's card when the install's SMTP will not send from its From address", async () => {
      const page = await newPage();
      // The file's sign-ins are past the login limits of the owner and of loopback by now: another
      // admin signs in, through another address.
      const admin = await addUser(app, acme.tenantId, 'admin', true);
      await page.setExtraHTTPHeaders({ 'x-forwarded-for': freshIp() });
      await signIn(page, admin.email);
      await page.goto(`${app.url}/console/brands`);
      const card = page.locator('article', { has: page.locator('#brand-default') });
      await card.getByLabel('From email').fill('hello@shop.acme.example');
      await card.getByRole('button', { name: 'Save sender' }).click();
      const warning = card
        .getByRole('status')
        .filter({ hasText: 'sender.from_email hello@shop.acme.example is not used' });
      await warning.waitFor();
      await expect(warning.textContent()).resolves.toContain('Verify shop.acme.example as a sender domain');
      // Reloaded, the card still says it.
      await page.reload();
      await page
        .locator('article', { has: page.locator('#brand-default') })
        .getByText('is not used')
        .waitFor();
      await shot(page, '13-brands-warning');
      expect((await api('PUT', '/v1/brandings/default/sender', { from_email: null })).body.warnings).toEqual([]);
      await page.close();
    });

    it('saw no script error and no policy violation', () => {
      expect(problems).toEqual([]);
    });
  });
});

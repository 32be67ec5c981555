// Two-factor sign-in in the console, in real Chromium against a real Herald with an injected clock:
// a user sets up an authenticator app from the QR code's key (the QR image must load under the
// console's policy), keeps the recovery codes shown once, then signs in with a code (a wrong one is
// refused in words) and with a recovery code (the second use refused); an owner requires a second
// factor on the Members page, and a member without one is held to the enrolment page until they set
// one up. Codes come from test/support/totp.ts (RFC 6238 by hand). Screenshots land in .tmp/screenshots/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { noChromium, launchChromium, recordingPage, type ChromiumSession } from '../../support/browser.ts';
import { totpCode, totpSecret } from '../../support/totp.ts';
import { titleUnless } from '../../support/skip-reasons.ts';
import { ManualClock } from '../../../server/base/clock.ts';
import { PASSWORD, addUser, createTenantFixture, requestAs, type TenantFixture } from '../../support/fixtures.ts';

const SHOTS = new URL('../.tmp/screenshots/', import.meta.url).pathname;

describe.skipIf(noChromium)(titleUnless(noChromium, 'two-factor sign-in in the console'), { timeout: 90_000 }, () => {
  let app: TestApp;
  let browser: ChromiumSession;
  let acme: TenantFixture;
  const clock = new ManualClock(Date.parse('2026-06-01T12:00:01Z'));
  const problems: string[] = [];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    app = await startTestApp({ clock, config: { trustedProxies: ['127.0.0.1'] } });
    acme = await createTenantFixture(app, 'Acme');
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  /** The code at the test clock (the server's), from the key the page shows. */
  const totp = (key: string) => totpCode(totpSecret(key), clock.now());

  /** The next step's code is a new one (a code works once), and the per-IP sign-in budget refills. */
  const later = () => clock.advance(60_000);

  const newPage = () => recordingPage(browser, problems);

  const shot = (page: Page, name: string) => page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });

  async function password(page: Page, email: string): Promise<void> {
    await page.goto(`${app.url}/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  /** Sets up an authenticator app on /console/two-factor; answers its key and the recovery codes. */
  async function enrol(page: Page): Promise<{ key: string; codes: string[] }> {
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    const qr = page.getByRole('img', { name: 'QR code to scan with your authenticator app' });
    await qr.waitFor();
    // The SVG loaded (the console's img-src allows data:) and has the size of a QR code.
    await expect(qr.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).resolves.toBe(true);
    await page.getByText('Cannot scan it? Enter this key instead').click();
    const key = (await page.locator('#totp-key').textContent())!;
    expect(key).toMatch(/^[A-Z2-7]{4}( [A-Z2-7]{1,4})+$/);
    await shot(page, '20-two-factor-scan');
    await page.getByLabel('Code').fill('000000' === totp(key) ? '111111' : '000000');
    await page.getByRole('button', { name: 'Turn on two-factor sign-in' }).click();
    await page.getByText('That code is not right. Enter the 6 digits your app shows now.').waitFor();
    await page.getByLabel('Code').fill(totp(key));
    await page.getByRole('button', { name: 'Turn on two-factor sign-in' }).click();
    await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor();
    const codes = await page.locator('#recovery-codes code').allTextContents();
    expect(codes).toHaveLength(10);
    await shot(page, '21-two-factor-recovery-codes');
    await page.getByRole('button', { name: 'I have saved them: continue' }).click();
    await page.waitForURL(/\/console\/activity/);
    return { key, codes };
  }

  async function signOut(page: Page): Promise<void> {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/login/);
  }

  it('sets up an authenticator app, then signs in with a code and with a recovery code once', async () => {
    const user = await addUser(app, acme.tenantId, 'admin', true);
    const page = await newPage();
    await password(page, user.email);
    await page.waitForURL(/\/console\/activity/);
    await page.getByRole('link', { name: 'Two-factor sign-in' }).click();
    await page.getByRole('heading', { name: 'Set up two-factor sign-in' }).waitFor();
    const { key, codes } = await enrol(page);

    // The shown codes are gone for good: the page says only how many are left.
    await page.goto(`${app.url}/console/two-factor`);
    await page.getByRole('heading', { name: 'Two-factor sign-in is on' }).waitFor();
    await page.getByText('10 of your recovery codes are left.', { exact: false }).waitFor();
    await expect(page.getByText(codes[0]!).count()).resolves.toBe(0);
    await page.getByRole('link', { name: 'Back to the console' }).click();
    await signOut(page);

    later();
    await password(page, user.email);
    await page.getByRole('heading', { name: 'Two-factor sign-in' }).waitFor();
    await shot(page, '22-two-factor-sign-in');
    await page.getByLabel('Code').fill(totp(key) === '123456' ? '654321' : '123456');
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByText('That code is not right, or was used already. Enter the code your app shows now.').waitFor();
    await page.getByLabel('Code').fill(totp(key));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(/\/console\/activity/);
    await expect(page.locator('#tenant-switcher option:checked').textContent()).resolves.toBe('Acme');
    await signOut(page);

    const withRecoveryCode = async (code: string) => {
      later();
      await password(page, user.email);
      await page.getByRole('button', { name: 'Use a recovery code instead' }).click();
      await page.getByLabel('Recovery code').fill(code);
      await page.getByRole('button', { name: 'Verify' }).click();
    };
    await withRecoveryCode(codes[3]!);
    await page.waitForURL(/\/console\/activity/);
    await signOut(page);
    await withRecoveryCode(codes[3]!);
    await page.getByText('That recovery code is not valid, or was used already.').waitFor();
    await expect(page.url()).toMatch(/\/login/);
    await page.close();
  });

  it('an owner requires it on the Members page; a member without it is held to setting it up', async () => {
    later();
    const tenant = await createTenantFixture(app, 'Strict');
    const page = await newPage();
    await password(page, tenant.ownerEmail);
    await page.waitForURL(/\/console\/activity/);
    await page.goto(`${app.url}/console/members`);
    const toggle = page.getByLabel('Require two-factor sign-in of every member');
    await toggle.check();
    // The owner has none yet: the switch goes back, and says why.
    await page.getByText('Set up your own two-factor sign-in first').waitFor();
    await expect(toggle.isChecked()).resolves.toBe(false);
    await page.getByRole('link', { name: 'set it up' }).click();
    await enrol(page);
    await page.goto(`${app.url}/console/members`);
    await page.getByLabel('Require two-factor sign-in of every member').check();
    await page.getByText('Every member now signs in with a second factor.').waitFor();
    await shot(page, '23-two-factor-required');
    const stored = await requestAs(app, 'GET', '/v1/auth/tenants', { token: tenant.ownerToken });
    expect(stored.body[0].require_mfa).toBe(true);
    await page.close();

    later();
    const member = await addUser(app, tenant.tenantId, 'admin', true);
    const memberPage = await newPage();
    await password(memberPage, member.email);
    await memberPage.waitForURL(/\/console\/two-factor/);
    await memberPage.getByText('Your tenant requires two-factor sign-in of every member.', { exact: false }).waitFor();
    await expect(memberPage.getByRole('link', { name: 'Back to the console' }).count()).resolves.toBe(0);
    // Any other page of the console sends them back.
    await memberPage.goto(`${app.url}/console/types`);
    await memberPage.waitForURL(/\/console\/two-factor/);
    await memberPage.getByRole('heading', { name: 'Set up two-factor sign-in' }).waitFor();
    await enrol(memberPage);
    await memberPage.goto(`${app.url}/console/types`);
    await memberPage.getByRole('heading', { name: 'Notification types' }).waitFor();
    await memberPage.close();
    expect(problems).toEqual([]);
  });
});

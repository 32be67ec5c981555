// The console's parts for the channels beyond the four, in real Chromium against a real Herald whose
// Twilio is a local peer: an SMS provider added and listed without its token, a test SMS through it,
// a 422 shown under the field it names, the HTTP endpoint's signing secret shown once, the email
// fallback relay, a contact's chat destination shown only as its hint, and sms, chat and http
// templates with their previews (the SMS encoding and segment count). Screenshots at 1366 and 390 px
// land in /tmp/console-*.png.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Locator, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { noChromium, launchChromium, recordingPage, type ChromiumSession } from '../../support/browser.ts';
import { titleUnless } from '../../support/skip-reasons.ts';
import {
  startSlackPeer,
  startTwilioPeer,
  type SlackPeer,
  type TwilioPeer,
} from '../../support/provider-peers/index.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.ts';
import { createTenantFixture, requestAs, type TenantFixture } from '../../support/fixtures.ts';

const WIDTHS = [1366, 390] as const;

describe.skipIf(noChromium)(titleUnless(noChromium, 'console channels in Chromium'), { timeout: 60_000 }, () => {
  let app: TestApp;
  let twilio: TwilioPeer;
  let slack: SlackPeer;
  let endpoint: WebhookReceiver;
  let browser: ChromiumSession;
  let acme: TenantFixture;
  let page: Page;
  const problems: string[] = [];
  const api = (method: string, path: string, body?: unknown) =>
    requestAs(app, method, path, { token: acme.serviceKey, body });

  beforeAll(async () => {
    twilio = await startTwilioPeer();
    slack = await startSlackPeer({ channels: ['C0123456789'] });
    endpoint = await startWebhookReceiver();
    app = await startTestApp({
      config: { providers: { twilioUrl: twilio.url, slackUrl: slack.url }, allowPrivateWebhookUrls: true },
    });
    acme = await createTenantFixture(app, 'Acme');
    expect(
      (
        await api('POST', '/v1/notification-types', {
          key: 'order_shipped',
          name: 'Order shipped',
          variables: [{ name: 'order_id', required: true }],
        })
      ).status,
    ).toBe(201);
    browser = await launchChromium();
    // One tab signs in once: the login limits would refuse a sign-in per test.
    page = await recordingPage(browser, problems);
    await page.goto(`${app.url}/login`);
    await page.getByLabel('Email').fill(acme.ownerEmail);
    await page.getByLabel('Password').fill('correct horse battery staple');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console\//);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await twilio?.close();
    await slack?.close();
    await endpoint?.close();
  });

  async function open(path: string, heading: string): Promise<void> {
    await page.goto(`${app.url}${path}`);
    await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
    await page.locator('.loading').waitFor({ state: 'detached' });
  }

  /** Full-page screenshots at each width, back at the wide one afterwards. */
  async function shots(name: string): Promise<void> {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: `/tmp/console-${name}-${width}.png`, fullPage: true });
    }
    await page.setViewportSize({ width: WIDTHS[0], height: 900 });
  }

  const part = (id: string): Locator => page.locator(`#transports-${id}`);
  const fieldOf = (scope: Locator, label: string): Locator =>
    scope.locator('.field', { has: page.getByLabel(label, { exact: true }) });

  it('adds a Twilio provider: listed without its token, a test SMS goes through the peer', async () => {
    await open('/console/transports', 'Transports');
    const sms = part('sms');
    await sms.getByText('No SMS provider yet').waitFor();
    await sms.getByText('Set up Twilio').click();
    await sms.getByLabel('Account SID').fill(twilio.accountSid);
    await sms.getByLabel('Auth token').fill(twilio.authToken);
    await sms.getByLabel('From (number or sender id)').first().fill('+15005550006');
    await sms.getByRole('button', { name: 'Save Twilio' }).click();
    const row = sms.locator('tbody tr', { hasText: 'Twilio' });
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain(twilio.accountSid);
    // The token is nowhere on the page, nor in what the API lists.
    expect(await page.content()).not.toContain(twilio.authToken);
    expect(JSON.stringify((await api('GET', '/v1/sms-transport')).body)).not.toContain(twilio.authToken);
    await sms.getByText('Change Twilio').click();
    await expect(sms.getByLabel('Auth token').inputValue()).resolves.toBe('');
    await expect(sms.getByLabel('Auth token').getAttribute('placeholder')).resolves.toContain('stored');

    await sms.getByLabel('Send a test SMS to').fill('+4915112345678');
    await sms.getByRole('button', { name: 'Send test SMS' }).click();
    await sms.getByText(/^Sent through Twilio/).waitFor();
    expect(twilio.received.map((m) => m.to)).toContain('+4915112345678');
  });

  it('shows a 422 under the field it names', async () => {
    await open('/console/transports', 'Transports');
    const sms = part('sms');
    await sms.getByText('Set up Vonage').click();
    const vonage = sms.locator('form', { has: page.getByRole('button', { name: 'Save Vonage' }) });
    await vonage.getByLabel('API key').fill('abc123');
    await vonage.getByLabel('API secret').fill('s3cret-vonage');
    await vonage.getByLabel('From (number or sender id)').fill('Acme');
    await vonage.getByLabel('Priority').fill('2.5');
    await vonage.getByRole('button', { name: 'Save Vonage' }).click();
    const priority = fieldOf(vonage, 'Priority');
    await priority.locator('.field-error').waitFor();
    await expect(vonage.getByLabel('Priority').getAttribute('aria-invalid')).resolves.toBe('true');
    await vonage.getByText('Check the marked field.').waitFor();
    // The message is read with the field, and goes once the input is right.
    const describedBy = (await vonage.getByLabel('Priority').getAttribute('aria-describedby'))!;
    const errorId = (await priority.locator('.field-error').getAttribute('id'))!;
    expect(describedBy.split(' ')).toContain(errorId);
    await shots('transports-422');
    await vonage.screenshot({ path: '/tmp/console-transports-422-form.png' });
    await vonage.getByLabel('Priority').fill('2');
    await vonage.getByRole('button', { name: 'Save Vonage' }).click();
    await sms.locator('tbody tr', { hasText: 'Vonage' }).waitFor();
    expect((await api('GET', '/v1/sms-transport')).body.map((e: { provider: string }) => e.provider)).toEqual([
      'twilio',
      'vonage',
    ]);
    expect(await page.content()).not.toContain('s3cret-vonage');

    // The SMTP forms take the same treatment: a port out of range is marked at the port.
    const email = part('email');
    const fallback = email.locator('section.panel', { hasText: 'Fallback email (SMTP)' });
    await fallback.getByLabel('Host', { exact: true }).fill('smtp.fallback.example');
    await fallback.getByLabel('Port', { exact: true }).fill('70000');
    await fallback.getByRole('button', { name: 'Save fallback' }).click();
    await fieldOf(fallback, 'Port').locator('.field-error').waitFor();
    await expect(fieldOf(fallback, 'Host').locator('.field-error').count()).resolves.toBe(0);
  });

  it('sets a Slack bot: listed without its token, a test message posts through the peer', async () => {
    await open('/console/transports', 'Transports');
    const chat = part('chat');
    await chat.getByText('No chat bot yet').waitFor();
    await chat.getByText('Set up Slack bot').click();
    const bot = chat.locator('form', { has: page.getByRole('button', { name: 'Save Slack bot' }) });
    await bot.getByLabel('Bot token').fill(slack.botToken);
    await chat.getByRole('button', { name: 'Save Slack bot' }).click();
    await chat.locator('tbody tr', { hasText: 'Slack bot' }).waitFor();
    expect(await page.content()).not.toContain(slack.botToken);
    await chat.getByLabel('Channel or user id').fill('C0123456789');
    await chat.getByRole('button', { name: 'Post a test message' }).click();
    await chat.getByText(/^Sent through Slack bot/).waitFor();
    // A channel the bot cannot post to: the provider's answer, in words.
    await chat.getByLabel('Channel or user id').fill('C9999999999');
    await chat.getByRole('button', { name: 'Post a test message' }).click();
    await chat.getByText(/^Not sent through Slack bot: .*channel_not_found/).waitFor();
  });

  it('sets the email fallback relay, with the email transport form', async () => {
    await open('/console/transports', 'Transports');
    const fallback = part('email').locator('section.panel', { hasText: 'Fallback email (SMTP)' });
    await fallback.getByText('Not set: an email the SMTP server above cannot take').waitFor();
    await fallback.getByLabel('Host', { exact: true }).fill('smtp.fallback.example');
    await fallback.getByLabel('Port', { exact: true }).fill('2525');
    await fallback.getByLabel('Password', { exact: true }).fill('fallback-password-1');
    await fallback.getByLabel('From email').fill('noreply@acme.example');
    await fallback.getByRole('button', { name: 'Save fallback' }).click();
    await fallback.getByRole('button', { name: 'Remove fallback' }).waitFor();
    const stored = (await api('GET', '/v1/email-transport/fallback')).body;
    expect(stored).toMatchObject({ configured: true, host: 'smtp.fallback.example', port: 2525 });
    await expect(fallback.getByLabel('Password', { exact: true }).inputValue()).resolves.toBe('');
    expect(await page.content()).not.toContain('fallback-password-1');
  });

  it("shows the HTTP endpoint's signing secret once, with a copy button; a test request reaches it", async () => {
    await open('/console/transports', 'Transports');
    const http = part('http');
    await http.getByText('Not set: HTTP deliveries are skipped').waitFor();
    await http.getByLabel('URL').fill(`${endpoint.url}/herald`);
    await http.getByLabel('Headers (JSON)').fill('{"Authorization": "Bearer endpoint-key-42"}');
    await http.getByRole('button', { name: 'Create endpoint' }).click();
    const secret = (await http.locator('#http-secret').textContent())!;
    expect(secret).toMatch(/^whsec_/);
    await http.getByText('Shown once: copy it now').waitFor();
    await http.locator('.shown-once').getByRole('button', { name: 'Copy' }).waitFor();
    await http.getByText('Authorization').first().waitFor();
    expect(await page.content()).not.toContain('endpoint-key-42');
    await shots('transports');

    await http.getByRole('button', { name: 'Send a test request' }).click();
    await http.getByText(/^Delivered \(HTTP 200\)/).waitFor();
    const request = await endpoint.waitFor((r) => r.path === '/herald');
    expect(request.headers['webhook-signature']).toBeTruthy();
    expect(request.headers.authorization).toBe('Bearer endpoint-key-42');

    // Saved again, or the page drawn again: the secret is not shown.
    await http.getByRole('button', { name: 'Save endpoint' }).click();
    await http.locator('#http-secret').waitFor({ state: 'detached' });
    await page.reload();
    await part('http').getByRole('button', { name: 'Save endpoint' }).waitFor();
    await expect(page.locator('#http-secret').count()).resolves.toBe(0);
    expect(await page.content()).not.toContain(secret);
  });

  it("adds a chat destination to a contact and shows only its webhook URL's hint", async () => {
    const created = await api('POST', '/v1/contacts', { external_id: 'team-orders', name: 'Orders team' });
    expect(created.status).toBe(201);
    const webhook = `${endpoint.url}/services/T0000/B0000/hushhushtopsecretXYZW`;
    await open('/console/contacts?external_id=team-orders', 'Contacts');
    const panel = page.locator('section.panel', { has: page.getByRole('heading', { name: 'Chat destinations' }) });
    await panel.getByText('No chat destination').waitFor();
    // Telegram takes a chat id, not a webhook URL.
    await panel.getByLabel('Provider').selectOption('telegram');
    await expect(panel.getByLabel('Webhook URL').isVisible()).resolves.toBe(false);
    await expect(panel.getByLabel('Chat id').isVisible()).resolves.toBe(true);
    await panel.getByLabel('Provider').selectOption('slack');
    await panel.getByLabel('Webhook URL').fill(webhook);
    await panel.getByLabel('Label').fill('#orders');
    await panel.getByRole('button', { name: 'Add destination' }).click();
    const row = panel.locator('tbody tr', { hasText: '#orders' });
    await row.waitFor();
    const listed = (await api('GET', `/v1/contacts/${created.body.id}/chat-destinations`)).body;
    const destination = (Array.isArray(listed) ? listed : listed.items)[0];
    await expect(row.locator('code').textContent()).resolves.toBe(destination.webhook_url_hint);
    expect(destination.webhook_url_hint).toMatch(/XYZW$/);
    expect(await page.content()).not.toContain('hushhushtopsecret');
    await panel.getByText('Add a chat destination').click();
    await expect(panel.getByLabel('Webhook URL').inputValue()).resolves.toBe('');
    await shots('contacts');

    page.once('dialog', (dialog) => void dialog.accept());
    await panel.getByRole('button', { name: 'Remove #orders' }).click();
    await panel.getByText('No chat destination').waitFor();
  });

  it("creates an sms template and shows the preview's encoding and segments", async () => {
    await open('/console/templates', 'Templates');
    const form = page.locator('section.panel', { has: page.getByRole('heading', { name: 'New template' }) });
    await form.getByLabel('Channel').selectOption('sms');
    await form.getByRole('button', { name: 'Create template' }).click();
    await page.waitForURL(/\/console\/templates\?sms=/);
    const meta = page.locator('.sms-meta');
    await expect.poll(() => meta.textContent(), { timeout: 10_000 }).toMatch(/GSM-7 · 1 segment ·/);

    const text = `Order {{ order_id }} 📦 is on its way. ${'Thanks for shopping with us. '.repeat(3)}`;
    await page.getByLabel('Text (with {{ placeholders }})').fill(text);
    await page.getByLabel('Sample variables (JSON)').fill('{"order_id": "A-1001"}');
    await page.getByRole('button', { name: 'Save and preview' }).click();
    await expect
      .poll(() => page.locator('.sms-bubble').textContent(), { timeout: 10_000 })
      .toContain('Order A-1001 📦');
    const id = new URL(page.url()).searchParams.get('sms')!;
    const template = (await api('GET', `/v1/sms-templates/${id}`)).body;
    const rendered = (
      await api('POST', '/v1/sms-templates/render', {
        notification_type_key: template.notification_type_key,
        brand_key: template.brand_key,
        language: template.language,
        variables: { order_id: 'A-1001' },
      })
    ).body;
    expect(rendered.encoding).toBe('ucs2');
    expect(rendered.segments).toBeGreaterThan(1);
    await expect
      .poll(() => meta.textContent(), { timeout: 10_000 })
      .toMatch(new RegExp(`^UCS-2 \\(Unicode\\) · ${rendered.segments} segments ·`));
    await shots('templates-sms');
  });

  it('edits chat and http templates and previews them', async () => {
    await open('/console/templates', 'Templates');
    const form = page.locator('section.panel', { has: page.getByRole('heading', { name: 'New template' }) });
    await form.getByLabel('Channel').selectOption('chat');
    await form.getByRole('button', { name: 'Create template' }).click();
    await page.waitForURL(/\/console\/templates\?chat=/);
    await page.getByLabel('Content (Markdown: bold, italic, code, links, lists)').fill('*Shipped* {{ order_id }}');
    await page.getByText('Provider blocks').click();
    await page
      .getByLabel('Slack blocks (JSON list, Block Kit)')
      .fill('[{"type": "section", "text": {"type": "mrkdwn", "text": "Order {{ order_id }}"}}]');
    await page.getByLabel('Sample variables (JSON)').fill('{"order_id": "C-3"}');
    await page.getByRole('button', { name: 'Save and preview' }).click();
    await expect.poll(() => page.locator('.preview-text').textContent(), { timeout: 10_000 }).toContain('C-3');
    await page.getByText('Slack blocks', { exact: true }).click();
    await expect.poll(() => page.locator('.preview-pane pre.json').first().textContent()).toContain('Order C-3');

    await open('/console/templates', 'Templates');
    await form.getByLabel('Channel').selectOption('http');
    await form.getByRole('button', { name: 'Create template' }).click();
    await page.waitForURL(/\/console\/templates\?http=/);
    await page
      .getByLabel('Body (JSON with {{ placeholders }} in its strings)')
      .fill('{"order": "{{ order_id }}", "n": 1}');
    await page.getByLabel('Sample variables (JSON)').fill('{"order_id": "H-9"}');
    await page.getByRole('button', { name: 'Save and preview' }).click();
    await expect
      .poll(() => page.locator('.preview-pane pre.json').textContent(), { timeout: 10_000 })
      .toContain('"order": "H-9"');
    // A body that is not JSON is refused at once, in words.
    await page.getByLabel('Body (JSON with {{ placeholders }} in its strings)').fill('{not json');
    await page.getByRole('button', { name: 'Save and preview' }).click();
    await page.getByText('The body must be JSON.').waitFor();
  });

  it('saw no script error and no policy violation', () => {
    expect(problems).toEqual([]);
  });
});

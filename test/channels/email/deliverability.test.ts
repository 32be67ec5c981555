// Email deliverability with real peers: Herald sends through smtp-server with one-click unsubscribe
// headers and a VERP envelope sender; DSN and ARF reports, built as real multipart/report messages,
// are delivered by nodemailer to Herald's inbound SMTP listener; the address is suppressed, the next
// trigger skips it, and the email.bounced / email.complained webhooks arrive. Also the suppression
// API, the one-click unsubscribe endpoint and the hosted preference page (in Chromium, without
// JavaScript).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import nodemailer from 'nodemailer';
import { Webhook } from 'standardwebhooks';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { startSmtpPeer, type SmtpPeer, type ReceivedMail } from '../../support/smtp-peer.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.ts';
import {
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  waitForFinal,
  type TenantFixture,
} from '../../support/fixtures.ts';
import { noChromium, launchChromium } from '../../support/browser.ts';
import { titleUnless } from '../../support/skip-reasons.ts';
import { INBOUND_MAX_BYTES } from '../../../server/channels/email/inbound-listener.ts';

const BOUNCE_DOMAIN = 'bounces.herald.test';
let app: TestApp;
let smtp: SmtpPeer;
let hooks: WebhookReceiver;
let t: TenantFixture;
let other: TenantFixture;
let secret: string;
const contacts: Record<string, string> = {};

const api = async (method: string, path: string, body?: unknown, token = t.serviceKey) =>
  app.request(method, path, { token, body });

beforeAll(async () => {
  smtp = await startSmtpPeer();
  hooks = await startWebhookReceiver();
  app = await startTestApp({
    config: {
      publicUrl: 'https://herald.example.test',
      bounceDomain: BOUNCE_DOMAIN,
      inboundSmtp: '127.0.0.1:0',
      allowPrivateWebhookUrls: true,
    },
    webhooks: { pollMs: 10 },
  });
  t = await createTenantFixture(app, 'Mailer');
  other = await createTenantFixture(app, 'Other');
  await api('PUT', '/v1/email-transport', {
    host: smtp.host,
    port: smtp.port,
    secure: false,
    from_email: 'robot@mailer.test',
    from_name: 'Mailer',
  });
  for (const [key, optOut] of [
    ['news', true],
    ['security', false],
  ] as const) {
    expect(
      (
        await api('POST', '/v1/notification-types', {
          key,
          name: key,
          description: '',
          channel_defaults: { inbox: false, email: true, push: false, web_push: false },
          opt_out: optOut,
          variables: [],
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await api('POST', '/v1/email-templates', {
          notification_type_key: key,
          subject: `${key} for {{ contact.external_id }}`,
          content:
            '<p>Hello.</p><p><a href="{{ unsubscribe_url }}">Unsubscribe</a> · <a href="{{ preferences_url }}">Preferences</a></p>',
        })
      ).status,
    ).toBe(201);
  }
  for (const name of ['ann', 'bob', 'cy', 'dee', 'eve', 'hal']) {
    contacts[name] = (await api('POST', '/v1/contacts', { external_id: name, email: `${name}@example.test` })).body.id;
  }
  const hook = await api('POST', '/v1/webhooks', {
    url: `${hooks.url}/mail`,
    event_types: ['email.bounced', 'email.complained', 'contact.unsubscribed'],
  });
  secret = hook.body.secret;
});

afterAll(async () => {
  await Promise.all([smtp?.close(), hooks?.close()]);
  await app?.close();
});

async function trigger(
  type: string,
  name: string,
): Promise<{ eventId: string; mail: ReceivedMail | null; event: any }> {
  const res = await api('POST', '/v1/notifications', { type, recipients: [name] });
  expect(res.status).toBe(202);
  const eventId = res.body.events[0].event_id;
  await waitForFinal(app, [eventId]);
  const event = (await api('GET', `/v1/notifications/${eventId}`)).body;
  const mail =
    event.deliveries[0].status === 'sent'
      ? await smtp.waitFor((m) => m.parsed.subject === `${type} for ${name}` && !seen.has(m))
      : null;
  if (mail) seen.add(mail);
  return { eventId, mail, event };
}
const seen = new Set<ReceivedMail>();

function inboundTransport() {
  return nodemailer.createTransport({
    host: '127.0.0.1',
    port: app.runtime.inboundSmtp!.port,
    secure: false,
    ignoreTLS: true,
    tls: { rejectUnauthorized: false },
  });
}

function deliveryStatusNotification(to: string, recipient: string, action: string, status: string): string {
  const b = 'dsn-boundary-1';
  return [
    'From: Mail Delivery System <MAILER-DAEMON@mx.example.test>',
    `To: ${to}`,
    'Subject: Undelivered Mail Returned to Sender',
    'Message-ID: <dsn.1@mx.example.test>',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${b}"`,
    '',
    `--${b}`,
    'Content-Type: text/plain; charset=us-ascii',
    '',
    'This is the mail system at host mx.example.test. Your message could not be delivered.',
    '',
    `--${b}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.example.test',
    'Arrival-Date: Wed, 25 Nov 2026 09:00:00 +0000',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    `Original-Recipient: rfc822; ${recipient}`,
    `Action: ${action}`,
    `Status: ${status}`,
    `Diagnostic-Code: smtp; ${status.startsWith('5') ? '550 5.1.1 <' + recipient + '>: Recipient address rejected: User unknown' : '452 4.2.2 Mailbox full'}`,
    '',
    `--${b}`,
    'Content-Type: message/rfc822',
    '',
    'From: robot@mailer.test',
    `To: ${recipient}`,
    'Subject: news',
    '',
    'Hello.',
    `--${b}--`,
    '',
  ].join('\r\n');
}

function feedbackReport(to: string, recipient: string): string {
  const b = 'arf-boundary-1';
  return [
    'From: <abuse@isp.example.test>',
    `To: ${to}`,
    'Subject: FW: news',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=feedback-report; boundary="${b}"`,
    '',
    `--${b}`,
    'Content-Type: text/plain; charset="US-ASCII"',
    '',
    'This is an email abuse report for an email message received from IP 192.0.2.1.',
    '',
    `--${b}`,
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'User-Agent: SomeGenerator/1.0',
    'Version: 1',
    `Original-Rcpt-To: ${recipient}`,
    'Source-IP: 192.0.2.1',
    '',
    `--${b}`,
    'Content-Type: message/rfc822',
    'Content-Disposition: inline',
    '',
    'From: robot@mailer.test',
    `To: ${recipient}`,
    'Subject: news',
    '',
    'Hello.',
    `--${b}--`,
    '',
  ].join('\r\n');
}

async function sendInbound(to: string, raw: string, from = 'MAILER-DAEMON@mx.example.test') {
  const transport = inboundTransport();
  try {
    return await transport.sendMail({ envelope: { from, to }, raw });
  } finally {
    transport.close();
  }
}

function verified(request: { headers: Record<string, string>; body: string }): any {
  return new Webhook(secret).verify(request.body, request.headers);
}

describe('outgoing email', () => {
  it('carries one-click unsubscribe headers, the links in the template and a VERP envelope sender', async () => {
    const { mail } = await trigger('news', 'ann');
    expect(mail!.envelope.from).toMatch(new RegExp(`^bounce\\+[0-9a-f]{52}@${BOUNCE_DOMAIN.replace(/\./g, '\\.')}$`));
    const raw = mail!.raw.replace(/\r\n[ \t]+/g, ' ');
    const header = /^List-Unsubscribe: (.*)$/im.exec(raw)?.[1];
    expect(header).toMatch(/^<https:\/\/herald\.example\.test\/u\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+>$/);
    expect(/^List-Unsubscribe-Post: (.*)$/im.exec(raw)?.[1]).toBe('List-Unsubscribe=One-Click');
    expect(mail!.parsed.html).toContain(header!.slice(1, -1));
    expect(mail!.parsed.html).toContain('https://herald.example.test/u/');
    expect(mail!.parsed.html).toContain('https://herald.example.test/preferences/');
  });

  it('previews templates with placeholder links, and reserves the link names', async () => {
    const preview = await api('POST', '/v1/email-templates/render', {
      notification_type_key: 'news',
      brand_key: 'default',
      variables: {},
      contact: { external_id: 'ann' },
    });
    expect(preview.status).toBe(200);
    expect(preview.body.html).toContain('href="#unsubscribe"');
    const reserved = await api('POST', '/v1/notification-types', {
      key: 'clash',
      name: 'x',
      description: '',
      channel_defaults: {},
      opt_out: true,
      variables: [{ name: 'unsubscribe_url', required: true, description: '' }],
    });
    expectValidationError(reserved, ['body', 'variables', 0, 'name']);
  });

  it('has no unsubscribe headers when the type cannot be opted out of', async () => {
    const { mail } = await trigger('security', 'ann');
    expect(mail!.parsed.headers.has('list-unsubscribe')).toBe(false);
    expect(mail!.parsed.headers.has('list-unsubscribe-post')).toBe(false);
  });
});

describe('bounces and complaints', () => {
  it('a hard bounce marks the delivery bounced, suppresses the address, skips the next email and emits email.bounced', async () => {
    const { eventId, mail } = await trigger('news', 'bob');
    const sent = await sendInbound(
      mail!.envelope.from,
      deliveryStatusNotification(mail!.envelope.from, 'bob@example.test', 'failed', '5.1.1'),
    );
    expect(sent.accepted).toEqual([mail!.envelope.from]);
    const event = (await api('GET', `/v1/notifications/${eventId}`)).body;
    expect(event.deliveries[0]).toMatchObject({
      channel: 'email',
      status: 'bounced',
      last_error: expect.stringContaining('5.1.1'),
    });
    const listed = await api('GET', '/v1/suppressions?email=BOB@example.test');
    expect(listed.body.items).toEqual([
      { email: 'bob@example.test', reason: 'hard_bounce', created_at: expect.any(String) },
    ]);
    const hook = await hooks.waitFor((r) => r.body.includes('email.bounced') && r.body.includes(eventId));
    expect(verified(hook)).toMatchObject({
      type: 'email.bounced',
      data: { event_id: eventId, email: 'bob@example.test', bounce_type: 'hard', status: '5.1.1', suppressed: true },
    });
    const next = await trigger('news', 'bob');
    expect(next.event.deliveries[0]).toMatchObject({ channel: 'email', status: 'skipped', reason: 'suppressed' });
    expect(next.event.status).toBe('skipped');
  });

  it('a complaint (ARF) marks the delivery complained, suppresses the address and emits email.complained', async () => {
    const { eventId, mail } = await trigger('news', 'cy');
    await sendInbound(
      mail!.envelope.from,
      feedbackReport(mail!.envelope.from, 'cy@example.test'),
      'abuse@isp.example.test',
    );
    const event = (await api('GET', `/v1/notifications/${eventId}`)).body;
    expect(event.deliveries[0].status).toBe('complained');
    expect((await api('GET', '/v1/suppressions?email=cy@example.test')).body.items[0].reason).toBe('complaint');
    const hook = await hooks.waitFor((r) => r.body.includes('email.complained') && r.body.includes(eventId));
    expect(verified(hook)).toMatchObject({
      type: 'email.complained',
      data: { email: 'cy@example.test', feedback_type: 'abuse', suppressed: true },
    });
  });

  it('suppresses after the third soft bounce in seven days, not before; a delay notice changes nothing', async () => {
    for (let i = 1; i <= 3; i++) {
      const { eventId, mail } = await trigger('news', 'dee');
      await sendInbound(
        mail!.envelope.from,
        deliveryStatusNotification(mail!.envelope.from, 'dee@example.test', 'delayed', '4.4.7'),
      );
      expect((await api('GET', `/v1/notifications/${eventId}`)).body.deliveries[0].status).toBe('sent');
      await sendInbound(
        mail!.envelope.from,
        deliveryStatusNotification(mail!.envelope.from, 'dee@example.test', 'failed', '4.2.2'),
      );
      expect((await api('GET', `/v1/notifications/${eventId}`)).body.deliveries[0].status).toBe('bounced');
      const suppressed = (await api('GET', '/v1/suppressions?email=dee@example.test')).body.items;
      if (i < 3) expect(suppressed).toEqual([]);
      else expect(suppressed[0].reason).toBe('soft_bounces');
    }
  });

  it('refuses garbage, huge mail, other domains and forged addresses, and keeps serving', async () => {
    const { mail } = await trigger('news', 'eve');
    const good = mail!.envelope.from;
    await expect(sendInbound(good, 'this is not a mail at all\r\n')).rejects.toMatchObject({ responseCode: 554 });
    await expect(
      sendInbound(
        good,
        'Subject: hi\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=x\r\n\r\n--x\r\n\r\ngarbage\r\n--x--\r\n',
      ),
    ).rejects.toMatchObject({ responseCode: 554 });
    const huge = deliveryStatusNotification(good, 'eve@example.test', 'failed', '5.1.1').replace(
      'Hello.',
      'x'.repeat(INBOUND_MAX_BYTES + 10),
    );
    await expect(sendInbound(good, huge)).rejects.toMatchObject({ responseCode: 552 });
    await expect(
      sendInbound('postmaster@example.com', deliveryStatusNotification(good, 'eve@example.test', 'failed', '5.1.1')),
    ).rejects.toMatchObject({ responseCode: 550 });
    const forged = good.replace(/bounce\+([0-9a-f])/, (_m, c: string) => `bounce+${c === '0' ? '1' : '0'}`);
    await expect(
      sendInbound(forged, deliveryStatusNotification(forged, 'eve@example.test', 'failed', '5.1.1')),
    ).rejects.toMatchObject({ responseCode: 550 });
    // Nothing of that touched eve; a genuine report still works.
    expect((await api('GET', '/v1/suppressions?email=eve@example.test')).body.items).toEqual([]);
    await sendInbound(good, deliveryStatusNotification(good, 'eve@example.test', 'failed', '5.2.1'));
    expect((await api('GET', '/v1/suppressions?email=eve@example.test')).body.items[0].reason).toBe('hard_bounce');
  });
});

describe('suppressions API', () => {
  it('adds, lists with a cursor, removes; per tenant', async () => {
    const added = await api('POST', '/v1/suppressions', { email: ' Zed@Example.TEST ' });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ email: 'zed@example.test', reason: 'manual' });
    expect((await api('POST', '/v1/suppressions', { email: 'zed@example.test' })).status).toBe(200);
    const first = await api('GET', '/v1/suppressions?limit=1');
    expect(first.body.items).toHaveLength(1);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await api('GET', `/v1/suppressions?limit=1&cursor=${first.body.next_cursor}`);
    expect(second.body.items[0].email > first.body.items[0].email).toBe(true);
    expect((await api('GET', '/v1/suppressions', undefined, other.serviceKey)).body.items).toEqual([]);
    expect((await api('DELETE', '/v1/suppressions/zed@example.test', undefined, other.serviceKey)).status).toBe(404);
    expect((await api('DELETE', '/v1/suppressions/ZED@example.test')).status).toBe(204);
    expect((await api('DELETE', '/v1/suppressions/zed@example.test')).status).toBe(404);
    // Lifting bob's suppression lets mail flow again.
    expect((await api('DELETE', '/v1/suppressions/bob@example.test')).status).toBe(204);
    expect((await trigger('news', 'bob')).event.deliveries[0].status).toBe('sent');
  });

  it('refuses other credentials and malformed input', async () => {
    await expectManagementOnly(app, t, 'GET', '/v1/suppressions');
    await expectManagementOnly(app, t, 'POST', '/v1/suppressions', { email: 'a@example.test' });
    await expectManagementOnly(app, t, 'DELETE', '/v1/suppressions/a@example.test');
    expectValidationError(await api('POST', '/v1/suppressions', { email: 'not an address' }), ['body', 'email']);
    expectValidationError(await api('POST', '/v1/suppressions', {}), ['body', 'email']);
    expectValidationError(await api('GET', '/v1/suppressions?email=nope'), ['query', 'email']);
    expectValidationError(await api('GET', '/v1/suppressions?cursor=%%%'), ['query', 'cursor']);
    expectValidationError(await api('GET', '/v1/suppressions?limit=0'), ['query', 'limit']);
    expectValidationError(await api('DELETE', '/v1/suppressions/nope'), ['path', 'email']);
  });
});

async function linksOf(name: string): Promise<{ unsubscribe: string; preferences: string }> {
  const { mail } = await trigger('news', name);
  const html = String(mail!.parsed.html);
  return {
    unsubscribe: /https:\/\/herald\.example\.test(\/u\/[A-Za-z0-9_.-]+)/.exec(html)![1]!,
    preferences: /https:\/\/herald\.example\.test(\/preferences\/[A-Za-z0-9_.-]+)/.exec(html)![1]!,
  };
}

const matrixOf = async (name: string) =>
  (await api('GET', `/v1/contacts/${contacts[name]}/preferences`)).body.preferences as Array<{
    type: string;
    channel: string;
    enabled: boolean;
    source: string;
  }>;

describe('one-click unsubscribe', () => {
  it("GET shows a button and changes nothing; POST with the RFC 8058 body opts out of the type's email", async () => {
    await api('POST', '/v1/contacts', { external_id: 'fay', email: 'fay@example.test' }).then(
      (r) => (contacts.fay = r.body.id),
    );
    const { unsubscribe } = await linksOf('fay');
    const page = await app.request('GET', unsubscribe);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.text).toContain('<form method="post">');
    expect(page.text).not.toContain('<script');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect((await matrixOf('fay')).find((e) => e.type === 'news' && e.channel === 'email')).toMatchObject({
      enabled: true,
      source: 'default',
    });

    const res = await app.request('POST', unsubscribe, {
      rawBody: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(200);
    expect((await matrixOf('fay')).find((e) => e.type === 'news' && e.channel === 'email')).toMatchObject({
      enabled: false,
      source: 'contact',
    });
    const hook = await hooks.waitFor((r) => r.body.includes('contact.unsubscribed') && r.body.includes(contacts.fay!));
    expect(verified(hook)).toMatchObject({ data: { type: 'news', channel: 'email', source: 'one_click' } });
    // Repeating it is harmless; the next news email is skipped as opted out.
    expect(
      (
        await app.request('POST', unsubscribe, {
          rawBody: 'List-Unsubscribe=One-Click',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        })
      ).status,
    ).toBe(200);
    expect((await trigger('news', 'fay')).event.deliveries[0]).toMatchObject({
      status: 'skipped',
      reason: 'opted_out',
    });
  });

  it('takes multipart bodies too, and refuses forged tokens, wrong bodies and other content', async () => {
    const { unsubscribe, preferences } = await linksOf('hal');
    const form = new FormData();
    form.set('List-Unsubscribe', 'One-Click');
    const multipart = await fetch(app.url + unsubscribe, { method: 'POST', body: form });
    expect(multipart.status).toBe(200);
    const token = unsubscribe.slice('/u/'.length);
    const altered = `${token.slice(0, 5)}${token[5] === 'A' ? 'B' : 'A'}${token.slice(6)}`;
    for (const path of [
      `/u/${altered}`,
      `/u/${token}x`,
      '/u/nonsense',
      `/u/${preferences.slice('/preferences/'.length)}`,
    ]) {
      expect((await app.request('GET', path)).status).toBe(404);
      expect(
        (
          await app.request('POST', path, {
            rawBody: 'List-Unsubscribe=One-Click',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
          })
        ).status,
      ).toBe(404);
    }
    expect((await app.request('GET', `/preferences/${token}`)).status).toBe(404);
    expectValidationError(
      await app.request('POST', unsubscribe, {
        rawBody: 'List-Unsubscribe=Yes',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      ['body', 'List-Unsubscribe'],
    );
    expectValidationError(await app.request('POST', unsubscribe), ['body', 'List-Unsubscribe']);
    expect((await app.request('POST', unsubscribe, { rawBody: '{"a":1}' })).status).toBe(415);
    expect(
      (
        await app.request('POST', unsubscribe, {
          rawBody: 'x'.repeat(20_000),
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        })
      ).status,
    ).toBe(413);
    expectValidationError(
      await app.request('POST', unsubscribe, {
        rawBody: '--b\r\ngarbage',
        headers: { 'content-type': 'multipart/form-data; boundary=b' },
      }),
      ['body'],
    );
  });
});

describe('the hosted preference page', () => {
  it.skipIf(noChromium)(
    titleUnless(noChromium, 'works without JavaScript in Chromium and changes the same matrix the API shows'),
    async () => {
      await api('POST', '/v1/contacts', { external_id: 'gus', email: 'gus@example.test' }).then(
        (r) => (contacts.gus = r.body.id),
      );
      const { preferences } = await linksOf('gus');
      const browser = await launchChromium({ javaScriptEnabled: false });
      try {
        const page = await browser.context.newPage();
        const violations: string[] = [];
        page.on('console', (m) => violations.push(m.text()));
        const response = await page.goto(app.url + preferences);
        expect(response!.status()).toBe(200);
        expect(response!.headers()['content-security-policy']).not.toContain('script-src');
        expect(await page.locator('script').count()).toBe(0);
        const news = page.locator('input[name="news:email"]');
        const security = page.locator('input[name="security:email"]');
        expect(await news.isChecked()).toBe(true);
        expect(await security.isDisabled()).toBe(true);
        await news.uncheck();
        await page.locator('input[name="news:inbox"]').check();
        await Promise.all([page.waitForLoadState('load'), page.locator('button[type="submit"]').click()]);
        await page.waitForSelector('[role="status"]');
        expect(await page.locator('input[name="news:email"]').isChecked()).toBe(false);
        expect(violations.filter((v) => /Content Security Policy/i.test(v))).toEqual([]);
        const matrix = await matrixOf('gus');
        expect(matrix.find((e) => e.type === 'news' && e.channel === 'email')).toMatchObject({
          enabled: false,
          source: 'contact',
        });
        expect(matrix.find((e) => e.type === 'news' && e.channel === 'inbox')).toMatchObject({
          enabled: true,
          source: 'contact',
        });
        expect(matrix.find((e) => e.type === 'security' && e.channel === 'email')).toMatchObject({
          enabled: true,
          source: 'default',
        });
        // The page shows what the API changed.
        await api('PUT', `/v1/contacts/${contacts.gus}/preferences`, { type: 'news', channel: 'email', enabled: true });
        await page.goto(app.url + preferences);
        expect(await page.locator('input[name="news:email"]').isChecked()).toBe(true);
      } finally {
        await browser.close();
      }
    },
  );

  it('refuses a save without the form, and forged tokens', async () => {
    const { preferences } = await linksOf('ann');
    expectValidationError(
      await app.request('POST', preferences, {
        rawBody: 'news:email=on',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      ['body', 'save'],
    );
    expect(
      (
        await app.request('POST', `${preferences}A`, {
          rawBody: 'save=1',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        })
      ).status,
    ).toBe(404);
    const page = await app.request('GET', preferences);
    expect(page.status).toBe(200);
    expect(page.text).toContain('name="news:email"');
  });
});

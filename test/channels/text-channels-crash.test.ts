// A worker process killed (SIGKILL) while it sends SMS and chat messages: the providers hold their
// answers, so the dead worker leaves requests in flight and deliveries pending. A second worker takes
// the jobs back and sends every message; each delivery ends sent, and the activity log tells how
// many attempts it took. A message whose request the provider took before the kill, but whose answer
// the dead worker never read, is sent again (neither Twilio nor Slack webhooks take an idempotency
// key): the test counts those, and every other message arrives exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  activeJobs,
  createTenantFixture,
  sql,
  untilHandedBack,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';
import { eventually } from '../support/eventually.ts';
import { killAll, startWorkerProcess } from '../support/worker-process.ts';
import { startSlackPeer, startTwilioPeer, type SlackPeer, type TwilioPeer } from '../support/provider-peers/index.ts';
import { CONFIG_FILE_NAME } from '../../server/base/config.ts';

const RECIPIENTS = 40;
const phoneOf = (i: number) => `+49151${String(20_000_000 + i).slice(-8)}`;

let app: TestApp;
let acme: TenantFixture;
let twilio: TwilioPeer;
let slack: SlackPeer;
let home: string;
const children: ChildProcess[] = [];

async function api(method: string, path: string, body?: unknown) {
  const res = await app.request(method, path, { token: acme.serviceKey, body });
  if (res.status >= 400) throw new Error(`${method} ${path} -> ${res.status} ${res.text}`);
  return res.body;
}

beforeAll(async () => {
  twilio = await startTwilioPeer();
  slack = await startSlackPeer();
  const providers = { twilioUrl: twilio.url, slackUrl: slack.url };
  app = await startTestApp({ role: 'api', config: { providers, allowPrivateWebhookUrls: true } });
  acme = await createTenantFixture(app, 'Acme');
  home = mkdtempSync(join(tmpdir(), 'herald-text-crash-'));
  writeFileSync(join(home, CONFIG_FILE_NAME), JSON.stringify({ providers }));
  await api('PUT', '/v1/sms-transport/twilio', {
    account_sid: twilio.accountSid,
    auth_token: twilio.authToken,
    from: '+15005550006',
  });
  await api('POST', '/v1/notification-types', {
    key: 'deploy',
    channel_defaults: { inbox: false, email: false, sms: true, chat: true },
  });
  await api('POST', '/v1/inbox-templates', {
    notification_type_key: 'deploy',
    title: 'Deploy {{ version }}',
    content: '{{ contact.name }}: version {{ version }} is live',
  });
  for (let i = 0; i < RECIPIENTS; i++) {
    const contact = await api('POST', '/v1/contacts', { external_id: `ops-${i}`, name: `Ops ${i}`, phone: phoneOf(i) });
    await api('POST', `/v1/contacts/${contact.id}/chat-destinations`, {
      provider: 'slack',
      webhook_url: slack.webhookUrl(),
    });
  }
});

afterAll(async () => {
  killAll(children);
  await app?.close();
  await twilio?.close();
  await slack?.close();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('a worker killed mid-send (SMS and chat)', () => {
  it('sends every message after a restart, and the activity log counts the attempts', async () => {
    const env = {
      DATABASE_URL: app.database.url,
      HERALD_HOME: home,
      HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys,
      HERALD_LOG_LEVEL: 'warn',
      HERALD_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
      HERALD_LOST_WORKER_SECONDS: '3',
    };
    const recipients = Array.from({ length: RECIPIENTS }, (_, i) => `ops-${i}`);
    const triggered = await api('POST', '/v1/notifications', {
      type: 'deploy',
      recipients,
      variables: { version: '2.0' },
    });
    const ids = (triggered.events as Array<{ event_id: string }>).map((e) => e.event_id);

    // The providers take requests but hold every answer: the worker dies with sends in flight.
    twilio.pauseAnswers();
    slack.pauseAnswers();
    const first = startWorkerProcess(env);
    children.push(first);
    await eventually(() => twilio.requests.length > 0 && slack.requests.length > 0, {
      timeoutMs: 30_000,
      intervalMs: 20,
      message: 'the first worker sent nothing to the providers',
    });
    const held = await activeJobs(app, 'deliver-event');
    expect(held.length).toBeGreaterThan(0); // it dies holding jobs
    first.kill('SIGKILL');
    const inFlight = { sms: twilio.requests.length, chat: slack.requests.length };
    twilio.resumeAnswers();
    slack.resumeAnswers();

    children.push(startWorkerProcess(env));
    await untilHandedBack(app, 'deliver-event', held);
    const final = await waitForFinal(app, ids, 60_000);
    expect(final.filter((e) => e.status !== 'delivered' && e.status !== 'sent')).toEqual([]);

    const deliveries = await sql<{ channel: string; status: string; attempts: number }>(
      app,
      `SELECT channel, status, attempts FROM deliveries WHERE event_id = ANY($1::uuid[])`,
      [ids],
    );
    expect(deliveries.filter((d) => d.channel === 'sms')).toHaveLength(RECIPIENTS);
    expect(deliveries.filter((d) => d.channel === 'chat')).toHaveLength(RECIPIENTS);
    expect(deliveries.filter((d) => d.status !== 'sent')).toEqual([]);

    // Every number and every webhook got its message; only those in flight at the kill may have two.
    const smsTo = new Map<string, number>();
    for (const m of twilio.received) smsTo.set(m.to, (smsTo.get(m.to) ?? 0) + 1);
    expect(smsTo.size).toBe(RECIPIENTS);
    const smsTwice = [...smsTo.values()].filter((n) => n > 1).length;
    expect(smsTwice).toBeLessThanOrEqual(inFlight.sms);
    const chatTo = new Map<string, number>();
    for (const m of slack.received) chatTo.set(m.path, (chatTo.get(m.path) ?? 0) + 1);
    expect(chatTo.size).toBe(RECIPIENTS);
    expect([...chatTo.values()].filter((n) => n > 1).length).toBeLessThanOrEqual(inFlight.chat);

    // The activity log says how many attempts each delivery took, and through which provider.
    const log = await api('GET', `/v1/notifications?type=deploy&limit=${RECIPIENTS}`);
    const attempts = (
      log.items as Array<{ deliveries: Array<{ channel: string; attempts: number; provider_attempts: unknown[] }> }>
    ).flatMap((e) => e.deliveries);
    expect(attempts).toHaveLength(2 * RECIPIENTS);
    expect(attempts.every((d) => d.attempts >= 1 && d.provider_attempts.length === d.attempts)).toBe(true);
  });
});

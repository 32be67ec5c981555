// A provider's 429 with Retry-After defers the delivery to the pause's end (server/delivery/pauses.ts)
// instead of spending a retry: with the retry schedule's first wait ten minutes long, these messages
// arrive within seconds only if the pause, not the schedule, decides when they go out. Through the
// real worker, to the Slack-shaped peer's incoming webhooks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  createTenantFixture,
  deliveryJobsOf,
  insertInboxTemplate,
  insertNotificationType,
  sql,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';
import { startSlackPeer, type SlackPeer } from '../support/provider-peers/index.ts';
import { PAUSED_ATTEMPTS_HONOURED, staysPending, withinPauseBudget } from '../../server/delivery/pauses.ts';
import type { DeliveryOutcome, DeliveryRow } from '../../server/channels/types.ts';

let app: TestApp;
let slack: SlackPeer;
let a: TenantFixture;

interface Row {
  status: string;
  attempts: number;
  provider_attempts: Array<{ outcome: string; error: string | null }>;
}

beforeAll(async () => {
  slack = await startSlackPeer();
  app = await startTestApp({ config: { allowPrivateWebhookUrls: true, deliveryRetrySchedule: [600, 600] } });
  a = await createTenantFixture(app, 'Acme');
  await insertNotificationType(app, a.tenantId, {
    key: 'deploy',
    channels: { inbox: false, email: false, push: false, web_push: false, chat: true },
  });
  await insertInboxTemplate(app, a.tenantId, { type: 'deploy', title: 'Deploy {{ version }}', content: 'Live.' });
});
afterAll(async () => {
  await app?.close();
  await slack?.close();
});

async function withDestination(externalId: string, webhookUrl: string): Promise<void> {
  const contact = await a.contact(externalId);
  const res = await app.request('POST', `/v1/contacts/${contact}/chat-destinations`, {
    token: a.serviceKey,
    body: { provider: 'slack', webhook_url: webhookUrl },
  });
  expect(res.status).toBe(201);
}

async function trigger(recipients: string[]): Promise<string[]> {
  const res = await app.request('POST', '/v1/notifications', {
    token: a.serviceKey,
    body: { type: 'deploy', recipients, variables: { version: '2.0.0' } },
  });
  expect(res.status).toBe(202);
  return (res.body.events as Array<{ event_id: string }>).map((e) => e.event_id);
}

const rowsOf = (eventIds: string[]) =>
  sql<Row>(
    app,
    `SELECT status, attempts, provider_attempts FROM deliveries WHERE event_id = ANY($1::uuid[]) AND channel = 'chat'`,
    [eventIds],
  );

describe("a provider's pause", () => {
  it('sends the delivery when the pause ends, not on the retry schedule, and spends no retry', async () => {
    const hook = slack.webhookUrl();
    await withDestination('paused-one', hook);
    slack.rateLimitNext(1, 1);
    const events = await trigger(['paused-one']);
    await waitForFinal(app, events, 15_000);
    const [row] = await rowsOf(events);
    expect(row).toMatchObject({ status: 'sent', attempts: 2 });
    expect(row!.provider_attempts.map((p) => p.outcome)).toEqual(['failed', 'sent']);
    expect(row!.provider_attempts[0]!.error).toContain('429');
    // The first job completed and a run of its own sent it: no job was failed for a retry.
    const jobs = await deliveryJobsOf(app, events);
    expect(jobs.length).toBeGreaterThanOrEqual(2);
    expect(jobs.every((j) => j.retry_count === 0)).toBe(true);
    const { count } = (
      await sql<{ count: number }>(
        app,
        `SELECT count(*)::int AS count FROM deliveries WHERE event_id = ANY($1::uuid[]) AND next_attempt_at IS NOT NULL`,
        [events],
      )
    )[0]!;
    expect(count).toBe(1);
  });

  it('a burst to one webhook that rate-limits goes out in full, none failed', async () => {
    const hook = slack.webhookUrl();
    const recipients = Array.from({ length: 6 }, (_, i) => `burst-${i}`);
    for (const id of recipients) await withDestination(id, hook);
    const before = slack.received.length;
    slack.rateLimitNext(3, 1);
    const events = await trigger(recipients);
    await waitForFinal(app, events, 20_000);
    const rows = await rowsOf(events);
    expect(rows.map((r) => r.status)).toEqual(Array(6).fill('sent'));
    expect(slack.received.slice(before).filter((m) => m.path === new URL(hook).pathname)).toHaveLength(6);
    // Passed over while paused, without asking Slack: those entries name the pause.
    for (const row of rows)
      for (const skipped of row.provider_attempts.filter((p) => p.outcome === 'skipped'))
        expect(skipped.error).toMatch(/^paused by the provider/);
  });
});

describe('the pause budget', () => {
  const waiting: DeliveryOutcome = { status: 'failed', error: 'HTTP 429', retryable: true, retryAt: 1_000 };
  const delivery = (attempts: number): DeliveryRow => ({
    id: 'd',
    channel: 'chat',
    destination: 'x',
    provider: 'slack',
    attempts,
  });

  it('defers while the delivery has attempts left to wait with, then leaves it to the retry schedule', () => {
    expect(withinPauseBudget(waiting, delivery(0))).toEqual(waiting);
    expect(withinPauseBudget(waiting, delivery(PAUSED_ATTEMPTS_HONOURED - 2))).toEqual(waiting);
    const spent = withinPauseBudget(waiting, delivery(PAUSED_ATTEMPTS_HONOURED - 1));
    expect(spent).toEqual({ status: 'failed', error: 'HTTP 429', retryable: true });
  });

  it('keeps a waiting delivery pending even on its job\u2019s last attempt', () => {
    expect(staysPending(waiting, true)).toBe(true);
    expect(staysPending({ status: 'failed', error: 'HTTP 503', retryable: true }, true)).toBe(false);
    expect(staysPending({ status: 'failed', error: 'HTTP 503', retryable: true }, false)).toBe(true);
    expect(staysPending({ status: 'failed', error: 'gone', retryable: false, retryAt: 1 }, false)).toBe(false);
  });
});

// The webhook dispatcher's wakes: after a delivery run commits, it polls the outbox every few
// milliseconds for a moment, but only while some endpoint is enabled; with none, a wake costs nothing
// (herald_webhook_polls_total counts its polls).
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';
import { metricsOf } from '../../server/base/metrics/registry.ts';
import { wakeWebhookDispatch } from '../../server/webhooks/wake.ts';

const POLL_MS = 100;
let app: TestApp;
let t: TenantFixture;
let receiver: WebhookReceiver;

beforeAll(async () => {
  app = await startTestApp({ config: { allowPrivateWebhookUrls: true }, webhooks: { pollMs: POLL_MS } });
  t = await createTenantFixture(app, 'Wakes');
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await app?.close();
});

/** Polls during 20 wakes 10 ms apart, and the idle polls that many milliseconds could hold at most. */
async function pollsDuringWakes(): Promise<{ polls: number; idleAtMost: number }> {
  const counter = metricsOf(app.runtime).webhookPolls;
  const before = (await counter.get()).values[0]!.value;
  const started = performance.now();
  for (let i = 0; i < 20; i++) {
    wakeWebhookDispatch(app.runtime);
    await sleep(10);
  }
  const elapsed = performance.now() - started;
  // The first loop polls every POLL_MS, the second every 5 x POLL_MS; one more of each at the edges.
  return {
    polls: (await counter.get()).values[0]!.value - before,
    idleAtMost: Math.ceil(elapsed / POLL_MS) + Math.ceil(elapsed / (5 * POLL_MS)) + 2,
  };
}

it('polls quickly after a wake only while some endpoint is enabled', async () => {
  await sleep(3 * POLL_MS); // an idle poll has found no endpoint
  const without = await pollsDuringWakes();
  expect(without.polls).toBeLessThanOrEqual(without.idleAtMost);

  const created = await app.request('POST', '/v1/webhooks', {
    token: t.serviceKey,
    body: { url: `${receiver.url}/wakes`, event_types: ['delivery.sent'] },
  });
  expect(created.status).toBe(201);
  await sleep(3 * POLL_MS); // an idle poll has found it
  // Polls every 5 ms in each of two loops (without the wakes, idle polling alone).
  const woken = await pollsDuringWakes();
  expect(woken.polls).toBeGreaterThanOrEqual(Math.max(20, 2 * woken.idleAtMost));
});

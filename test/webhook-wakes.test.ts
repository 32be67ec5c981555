// The webhook dispatcher's wakes: after a delivery run commits, it polls the outbox every few
// milliseconds for a moment, but only while some endpoint is enabled; with none, a wake costs nothing
// (herald_webhook_polls_total counts its polls).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';
import { createTenantFixture, type TenantFixture } from './support/fixtures.ts';
import { metricsOf } from '../server/metrics/registry.ts';
import { wakeWebhookDispatch } from '../server/webhooks/wake.ts';

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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function pollsDuringWakes(): Promise<number> {
  const counter = metricsOf(app.runtime).webhookPolls;
  const before = (await counter.get()).values[0]!.value;
  for (let i = 0; i < 20; i++) {
    wakeWebhookDispatch(app.runtime);
    await sleep(10);
  }
  return (await counter.get()).values[0]!.value - before;
}

it('polls quickly after a wake only while some endpoint is enabled', async () => {
  await sleep(3 * POLL_MS); // an idle poll has found no endpoint
  // Idle polling alone over the 200 ms: two or three polls of the first loop, maybe one of the second.
  expect(await pollsDuringWakes()).toBeLessThanOrEqual(6);

  const created = await app.request('POST', '/v1/webhooks', { token: t.serviceKey, body: { url: `${receiver.url}/wakes`, event_types: ['delivery.sent'] } });
  expect(created.status).toBe(201);
  await sleep(3 * POLL_MS); // an idle poll has found it
  // Polls every 5 ms in each of two loops.
  expect(await pollsDuringWakes()).toBeGreaterThanOrEqual(20);
});

// Outbound webhooks against a real HTTP receiver that verifies signatures with the standardwebhooks
// package: endpoint management, emission in the changing transaction (delivery/event triggers and
// services), retries with the attempts log, 410, redirects, the SSRF guard, and a killed worker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/eventually.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import {
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  insertInboxTemplate,
  insertNotificationType,
  sql,
  sqlOne,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';
import { HERALD_BIN } from '../support/cli.ts';
import { execute } from '../../server/base/db/sql.ts';
import { emitWebhookEvent } from '../../server/webhooks/emit.ts';
import { postWebhook } from '../../server/webhooks/post.ts';

// A refusal names the setting that allows private addresses, as a key and as an environment variable.
const ALLOWS_PRIVATE_WEBHOOKS =
  'allowPrivateWebhookUrls, HERALD_ALLOW_PRIVATE_WEBHOOK_URLS=true, allows private ones; it applies at restart';

let app: TestApp;
let t: TenantFixture;
let other: TenantFixture;
let receiver: WebhookReceiver;

beforeAll(async () => {
  app = await startTestApp({
    config: { allowPrivateWebhookUrls: true },
    webhooks: { retryScheduleMs: [100, 200, 300], pollMs: 10 },
  });
  t = await createTenantFixture(app, 'Hooks');
  other = await createTenantFixture(app, 'Other');
  receiver = await startWebhookReceiver();
  await insertNotificationType(app, t.tenantId, { key: 'plain' });
  await insertInboxTemplate(app, t.tenantId, { type: 'plain', title: 'Hello {{ contact.external_id }}', content: 'B' });
});

afterAll(async () => {
  await receiver?.close();
  await app?.close();
});

const api = (method: string, path: string, body?: unknown, token = t.serviceKey) =>
  app.request(method, path, { token, body });

async function endpoint(path: string, eventTypes: string[]): Promise<{ id: string; secret: string }> {
  const res = await api('POST', '/v1/webhooks', {
    url: `${receiver.url}${path}`,
    event_types: eventTypes,
    description: path,
  });
  expect(res.status).toBe(201);
  return res.body;
}

function verify(
  secret: string,
  request: { headers: Record<string, string>; body: string },
): { type: string; timestamp: string; data: Record<string, unknown> } {
  return new Webhook(secret).verify(request.body, request.headers) as never;
}

describe('endpoints', () => {
  it('creates with a secret shown once, lists, gets, updates, rotates and deletes', async () => {
    const created = await api('POST', '/v1/webhooks', {
      url: `${receiver.url}/crud`,
      event_types: ['delivery.sent', 'delivery.sent'],
      description: 'crud',
    });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(created.body).toMatchObject({
      url: `${receiver.url}/crud`,
      event_types: ['delivery.sent'],
      enabled: true,
      disabled_reason: null,
    });
    const id = created.body.id;
    const stored = await sqlOne<{ secret_ciphertext: string }>(
      app,
      `SELECT secret_ciphertext FROM webhook_endpoints WHERE id = $1`,
      [id],
    );
    expect(stored!.secret_ciphertext).not.toContain(created.body.secret.slice(6));

    const listed = await api('GET', '/v1/webhooks');
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((w: { id: string }) => w.id)).toContain(id);
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');
    expect((await api('GET', `/v1/webhooks/${id}`)).body).not.toHaveProperty('secret');

    const patched = await api('PATCH', `/v1/webhooks/${id}`, { event_types: ['event.completed'], enabled: false });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      event_types: ['event.completed'],
      enabled: false,
      disabled_reason: 'disabled',
    });
    expect((await api('PATCH', `/v1/webhooks/${id}`, { enabled: true })).body).toMatchObject({
      enabled: true,
      disabled_reason: null,
    });

    const rotated = await api('POST', `/v1/webhooks/${id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.body.secret);

    // The test ping is signed with the rotated secret only.
    const ping = await api('POST', `/v1/webhooks/${id}/test`);
    expect(ping.status).toBe(202);
    expect(ping.body).toMatchObject({ event_type: 'webhook.test', status: 'pending', attempts: 0 });
    const got = await receiver.waitFor((r) => r.headers['webhook-id'] === ping.body.id);
    expect(verify(rotated.body.secret, got)).toMatchObject({ type: 'webhook.test', data: { webhook_id: id } });
    expect(() => verify(created.body.secret, got)).toThrow();

    expect((await api('DELETE', `/v1/webhooks/${id}`)).status).toBe(204);
    expect((await api('GET', `/v1/webhooks/${id}`)).status).toBe(404);
    expect((await api('DELETE', `/v1/webhooks/${id}`)).status).toBe(404);
    expect(app.logs.join('\n')).not.toContain(rotated.body.secret.slice(6));
  });

  it('refuses other credentials, other tenants and malformed input', async () => {
    const { id } = await endpoint('/scoped', ['delivery.sent']);
    await expectManagementOnly(app, t, 'GET', '/v1/webhooks');
    await expectManagementOnly(app, t, 'POST', `/v1/webhooks/${id}/test`);
    for (const [method, path] of [
      ['GET', `/v1/webhooks/${id}`],
      ['PATCH', `/v1/webhooks/${id}`],
      ['DELETE', `/v1/webhooks/${id}`],
      ['POST', `/v1/webhooks/${id}/rotate-secret`],
      ['POST', `/v1/webhooks/${id}/test`],
      ['GET', `/v1/webhooks/${id}/deliveries`],
    ] as const) {
      expect(
        (await api(method, path, method === 'PATCH' ? { description: 'x' } : undefined, other.serviceKey)).status,
      ).toBe(404);
    }
    expectValidationError(
      await api('POST', '/v1/webhooks', { url: 'ftp://example.com/x', event_types: ['delivery.sent'] }),
      ['body', 'url'],
    );
    expectValidationError(await api('POST', '/v1/webhooks', { url: `${receiver.url}/x`, event_types: [] }), [
      'body',
      'event_types',
    ]);
    expectValidationError(await api('POST', '/v1/webhooks', { url: `${receiver.url}/x`, event_types: ['nope'] }), [
      'body',
      'event_types',
      0,
    ]);
    expectValidationError(await app.request('POST', '/v1/webhooks', { token: t.serviceKey, rawBody: '{"url":' }), [
      'body',
    ]);
    expectValidationError(await api('GET', `/v1/webhooks/${id}/deliveries?status=lost`), ['query', 'status']);
    expectValidationError(await api('GET', `/v1/webhooks/${id}/deliveries?cursor=abc`), ['query', 'cursor']);
    expect((await api('GET', '/v1/webhooks/not-a-uuid')).status).toBe(404);
    expect((await api('POST', `/v1/webhooks/${id}/deliveries/not-a-uuid/retry`)).status).toBe(404);
  });

  it('refuses a private address unless the install allows it, at creation and at send time', async () => {
    const strict = await startTestApp({
      database: app.database,
      config: { allowPrivateWebhookUrls: false, encryptionKeys: app.config.encryptionKeys },
      role: 'api',
    });
    try {
      for (const url of [
        'http://127.0.0.1:9/x',
        'http://10.0.0.8/x',
        'http://localhost/x',
        'http://[::1]/x',
        'http://169.254.169.254/latest',
      ]) {
        const res = await strict.request('POST', '/v1/webhooks', {
          token: t.serviceKey,
          body: { url, event_types: ['webhook.test'] },
        });
        expectValidationError(res, ['body', 'url']);
        expect(res.body.detail[0].msg).toContain(ALLOWS_PRIVATE_WEBHOOKS);
      }
      // At send time too (a row whose URL was allowed once): nothing reaches the receiver.
      const before = receiver.received.length;
      const result = await postWebhook(strict.runtime, `${receiver.url}/private`, {}, '{}', 2000);
      expect(result).toMatchObject({ kind: 'refused' });
      expect((result as { error: string }).error).toContain(ALLOWS_PRIVATE_WEBHOOKS);
      const byName = await postWebhook(strict.runtime, `http://localhost:9/private`, {}, '{}', 2000);
      expect(byName).toMatchObject({ kind: 'refused' });
      expect((byName as { error: string }).error).toContain(ALLOWS_PRIVATE_WEBHOOKS);
      expect(receiver.received.length).toBe(before);
    } finally {
      await strict.close();
    }
  });
});

describe('delivery', () => {
  it("reports a trigger's deliveries and the event's completion, signed, from the changing transactions", async () => {
    const { id, secret } = await endpoint('/events', ['delivery.sent', 'event.completed']);
    const res = await api('POST', '/v1/notifications', { type: 'plain', recipients: ['w1', 'w2'] });
    expect(res.status).toBe(202);
    const eventIds: string[] = res.body.events.map((e: { event_id: string }) => e.event_id);
    await waitForFinal(app, eventIds);
    const got = await receiver.waitForCount((r) => r.path === '/events', 4);
    const bodies = got.map((r) => verify(secret, r));
    const completed = bodies.filter((b) => b.type === 'event.completed').map((b) => b.data.event_id);
    expect(completed.sort()).toEqual([...eventIds].sort());
    const sent = bodies.filter((b) => b.type === 'delivery.sent');
    expect(sent.map((b) => b.data.event_id).sort()).toEqual([...eventIds].sort());
    expect(sent[0]!.data).toMatchObject({ channel: 'inbox', status: 'delivered' });
    for (const b of bodies) expect(b.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The attempts are recorded once the dispatcher's batch is done, just after the receiver has them.
    const log = await eventually(async () => {
      const read = await api('GET', `/v1/webhooks/${id}/deliveries?status=succeeded`);
      expect(read.body.items).toHaveLength(4);
      return read;
    });
    expect(log.body.items[0]).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      last_status_code: 200,
      next_attempt_at: null,
    });
    await api('PATCH', `/v1/webhooks/${id}`, { enabled: false });
  });

  it('emits nothing for a rolled-back change and exactly once for a committed one', async () => {
    const { id } = await endpoint('/tx', ['contact.unsubscribed']);
    const em = app.runtime.orm.em.fork();
    await expect(
      em.transactional(async (tx) => {
        await emitWebhookEvent(tx, t.tenantId, 'contact.unsubscribed', { contact_id: 'x' });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    // A delivery status change rolled back leaves no outbox row either.
    await expect(
      em.transactional(async (tx) => {
        await execute(tx, `UPDATE deliveries SET status = 'failed' WHERE tenant_id = $1`, [t.tenantId]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect((await sql(app, `SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1`, [id])).length).toBe(0);
    await emitWebhookEvent(em, t.tenantId, 'contact.unsubscribed', { contact_id: 'y' });
    await receiver.waitFor((r) => r.path === '/tx');
    await new Promise((r) => setTimeout(r, 200)); // an absence: a second delivery would have come by now
    expect(receiver.received.filter((r) => r.path === '/tx')).toHaveLength(1);
    await api('DELETE', `/v1/webhooks/${id}`);
  });

  it('retries a receiver that is down until it is up, and the attempts log says so', async () => {
    const { id, secret } = await endpoint('/flaky', ['webhook.test']);
    let calls = 0;
    receiver.answer = (r) => (r.path === '/flaky' && ++calls <= 2 ? 503 : 200);
    try {
      const ping = await api('POST', `/v1/webhooks/${id}/test`);
      const got = await receiver.waitForCount((r) => r.path === '/flaky', 3);
      // The same message every time (webhook-id), each attempt signed anew.
      expect(new Set(got.map((r) => r.headers['webhook-id']))).toEqual(new Set([ping.body.id]));
      for (const r of got) expect(verify(secret, r)).toMatchObject({ type: 'webhook.test' });
      const row = await waitForDelivery(id, ping.body.id, (d) => d.status === 'succeeded');
      expect(row).toMatchObject({ status: 'succeeded', attempts: 3, last_status_code: 200, last_error: null });
      expect((await api('GET', `/v1/webhooks/${id}`)).body.enabled).toBe(true);
    } finally {
      receiver.answer = () => 200;
    }
  });

  it('fails after the last retry; a manual retry sends it again', async () => {
    const { id } = await endpoint('/down', ['webhook.test']);
    receiver.answer = (r) => (r.path === '/down' ? 500 : 200);
    try {
      const ping = await api('POST', `/v1/webhooks/${id}/test`);
      const failed = await waitForDelivery(id, ping.body.id, (d) => d.status === 'failed');
      expect(failed).toMatchObject({
        attempts: 4,
        last_status_code: 500,
        last_error: 'HTTP 500',
        next_attempt_at: null,
      });
      receiver.answer = () => 200;
      const retried = await api('POST', `/v1/webhooks/${id}/deliveries/${ping.body.id}/retry`);
      expect(retried.status).toBe(202);
      expect(retried.body.status).toBe('pending');
      expect(await waitForDelivery(id, ping.body.id, (d) => d.status === 'succeeded')).toMatchObject({
        attempts: 5,
        last_status_code: 200,
      });
      expect(
        (await api('POST', `/v1/webhooks/${id}/deliveries/${ping.body.id}/retry`, undefined, other.serviceKey)).status,
      ).toBe(404);
    } finally {
      receiver.answer = () => 200;
    }
  });

  it('disables an endpoint that answers 410', async () => {
    const { id } = await endpoint('/gone', ['webhook.test']);
    receiver.answer = (r) => (r.path === '/gone' ? 410 : 200);
    try {
      const ping = await api('POST', `/v1/webhooks/${id}/test`);
      expect(await waitForDelivery(id, ping.body.id, (d) => d.status === 'failed')).toMatchObject({
        attempts: 1,
        last_status_code: 410,
      });
      const hook = (await api('GET', `/v1/webhooks/${id}`)).body;
      expect(hook).toMatchObject({ enabled: false, disabled_reason: expect.stringContaining('410') });
      // A disabled endpoint gets nothing more; deliveries wait until it is enabled again.
      const second = await api('POST', `/v1/webhooks/${id}/test`);
      await new Promise((r) => setTimeout(r, 300));
      expect(receiver.received.filter((r) => r.headers['webhook-id'] === second.body.id)).toHaveLength(0);
    } finally {
      receiver.answer = () => 200;
    }
  });

  it('disables an endpoint failing for three days', async () => {
    const { id } = await endpoint('/failing', ['webhook.test']);
    await execute(
      app.runtime.orm.em.fork(),
      `UPDATE webhook_endpoints SET failing_since = now() - interval '3 days 1 minute' WHERE id = $1`,
      [id],
    );
    receiver.answer = (r) => (r.path === '/failing' ? 502 : 200);
    try {
      const ping = await api('POST', `/v1/webhooks/${id}/test`);
      await waitForDelivery(id, ping.body.id, (d) => d.attempts >= 1);
      expect((await api('GET', `/v1/webhooks/${id}`)).body).toMatchObject({
        enabled: false,
        disabled_reason: expect.stringContaining('three days'),
      });
    } finally {
      receiver.answer = () => 200;
    }
  });

  it('does not follow a redirect', async () => {
    const { id } = await endpoint('/moved', ['webhook.test']);
    receiver.answer = (r) => (r.path === '/moved' ? { redirect: `${receiver.url}/target` } : 200);
    try {
      const ping = await api('POST', `/v1/webhooks/${id}/test`);
      const row = await waitForDelivery(id, ping.body.id, (d) => d.attempts >= 1);
      expect(row).toMatchObject({
        last_status_code: 302,
        last_error: expect.stringContaining('redirects are not followed'),
      });
      await new Promise((r) => setTimeout(r, 200)); // an absence: a followed redirect would have arrived by now
      expect(receiver.received.filter((r) => r.path === '/target')).toHaveLength(0);
    } finally {
      receiver.answer = () => 200;
      await api('DELETE', `/v1/webhooks/${id}`);
    }
  });
});

async function waitForDelivery(
  endpointId: string,
  deliveryId: string,
  done: (d: any) => boolean,
  timeoutMs = 15_000,
): Promise<any> {
  return eventually(
    async () => {
      const res = await api('GET', `/v1/webhooks/${endpointId}/deliveries`);
      const row = res.body.items.find((d: { id: string }) => d.id === deliveryId);
      if (!row || !done(row)) throw new Error(`delivery ${deliveryId} not done: ${JSON.stringify(row)}`);
      return row;
    },
    { timeoutMs },
  );
}

describe('a killed webhook worker', () => {
  it('loses no webhook: its leased deliveries are sent by the next worker', { timeout: 90_000 }, async () => {
    const api2 = await startTestApp({ role: 'api', config: { allowPrivateWebhookUrls: true } });
    const home = mkdtempSync(join(tmpdir(), 'herald-hooks-'));
    const sink = await startWebhookReceiver();
    let child: ChildProcess | null = null;
    try {
      const fx = await createTenantFixture(api2, 'Crash');
      const created = await api2.request('POST', '/v1/webhooks', {
        token: fx.serviceKey,
        body: { url: `${sink.url}/k`, event_types: ['contact.unsubscribed'] },
      });
      const TOTAL = 400;
      const em = api2.runtime.orm.em.fork();
      await em.transactional(async (tx) => {
        for (let i = 0; i < TOTAL; i++) await emitWebhookEvent(tx, fx.tenantId, 'contact.unsubscribed', { n: i });
      });
      // The first 50 requests are answered; then the receiver holds every request: the worker dies
      // with deliveries claimed and in flight.
      sink.answer = () => (sink.received.length <= 50 ? 200 : 'hang');
      const env = {
        ...process.env,
        DATABASE_URL: api2.database.url,
        HERALD_HOME: home,
        HERALD_ENCRYPTION_KEYS: api2.config.encryptionKeys,
        HERALD_LOG_LEVEL: 'warn',
        HERALD_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
      };
      child = spawn(HERALD_BIN, ['start', '--role', 'worker'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
      await sink.waitForCount(() => true, 60, 45_000);
      child.kill('SIGKILL');
      await once(child, 'exit');
      const pending = await sqlOne<{ n: number }>(
        api2,
        `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'`,
      );
      expect(pending!.n).toBeGreaterThan(0);
      // The dead worker's leases (2 minutes) are made to run out now rather than waited for.
      await execute(em, `UPDATE webhook_deliveries SET next_attempt_at = now() WHERE status = 'pending'`);
      sink.answer = () => 200;
      const worker = await startTestApp({
        database: api2.database,
        role: 'worker',
        http: false,
        config: { allowPrivateWebhookUrls: true, encryptionKeys: api2.config.encryptionKeys },
      });
      try {
        await eventually(
          async () => {
            const left = await sqlOne<{ n: number }>(
              api2,
              `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'succeeded'`,
            );
            if (left!.n > 0) throw new Error(`${left!.n} webhook deliveries not sent`);
          },
          { timeoutMs: 30_000, intervalMs: 100 },
        );
      } finally {
        await worker.close();
      }
      const ids = new Set(sink.received.map((r) => r.headers['webhook-id']));
      expect(ids.size).toBe(TOTAL);
      expect(created.status).toBe(201);
    } finally {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await sink.close();
      await api2.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

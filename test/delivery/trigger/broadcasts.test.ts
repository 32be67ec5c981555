// Broadcasts: 202 at once, a fan-out of one event per contact (a topic, or all contacts), delivered as
// any trigger's; live counts and completion; Idempotency-Key; send_at; cancel mid-fan-out; an empty
// topic; a topic deleted during the fan-out; a worker killed mid-fan-out (kill -9) ends with exactly
// one event per contact; every route's statuses, credentials and tenant isolation.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startWorkerProcess } from '../../support/worker-process.ts';
import { startTestApp, type TestApp } from '../../support/app.ts';
import {
  activeJobs,
  addUser,
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  insertInboxTemplate,
  insertNotificationType,
  sql,
  sqlOne,
  untilHandedBack,
  type TenantFixture,
} from '../../support/fixtures.ts';
import { signal } from '../../support/signal.ts';
import { eventually } from '../../support/eventually.ts';
import { execute, queryOne } from '../../../server/base/db/sql.ts';
import { upsertContactCounts } from '../../../server/resources/contact-upsert.ts';
import { fanOutBroadcast } from '../../../server/delivery/trigger/fan-out.ts';
import { completeBroadcastIfDone } from '../../../server/delivery/trigger/broadcasts.ts';
import { secretVariablesAad } from '../../../server/delivery/trigger/notifications.ts';

/** Creates a topic with `count` subscribers named `${prefix}${i}`. */
async function topicWith(
  app: TestApp,
  fx: TenantFixture,
  key: string,
  count: number,
  prefix = `${key}-`,
): Promise<void> {
  expect((await app.request('POST', '/v1/topics', { token: fx.serviceKey, body: { key, name: key } })).status).toBe(
    201,
  );
  const ids = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  for (let at = 0; at < ids.length; at += 1000) {
    const res = await app.request('POST', `/v1/topics/${key}/subscribers`, {
      token: fx.serviceKey,
      body: { external_ids: ids.slice(at, at + 1000) },
    });
    expect(res.status).toBe(200);
  }
}

async function setUpTenant(app: TestApp, name: string): Promise<TenantFixture> {
  const fx = await createTenantFixture(app, name);
  await insertNotificationType(app, fx.tenantId, { key: 'news', variables: [{ name: 'headline', required: true }] });
  await insertInboxTemplate(app, fx.tenantId, {
    type: 'news',
    title: '{{ headline }} for {{ contact.external_id }}',
    content: 'code {{ code }}',
  });
  return fx;
}

function broadcast(
  app: TestApp,
  fx: TenantFixture,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  return app.request('POST', '/v1/broadcasts', {
    token: fx.serviceKey,
    body: { type: 'news', variables: { headline: 'Hello' }, secret_variables: { code: 'x' }, ...body },
    headers,
  });
}

async function waitForStatus(
  app: TestApp,
  fx: TenantFixture,
  id: string,
  status: string,
  timeoutMs = 60_000,
): Promise<any> {
  return eventually(
    async () => {
      const res = await app.request('GET', `/v1/broadcasts/${id}`, { token: fx.serviceKey });
      expect(res.status).toBe(200);
      if (res.body.status !== status) throw new Error(JSON.stringify(res.body));
      return res.body;
    },
    { timeoutMs, intervalMs: 100, message: `broadcast ${id} not ${status} after ${timeoutMs} ms` },
  );
}

const eventsPerContact = (app: TestApp, broadcastId: string) =>
  sql<{ contact_id: string; n: number }>(
    app,
    `SELECT contact_id, count(*)::int AS n FROM events WHERE broadcast_id = $1 GROUP BY contact_id`,
    [broadcastId],
  );

describe("broadcasts, delivered by the app's own workers", () => {
  let app: TestApp;
  let acme: TenantFixture;
  let globex: TenantFixture;

  beforeAll(async () => {
    // A webhook endpoint on loopback (nothing listens there: only the outbox row is checked).
    app = await startTestApp({ config: { allowPrivateWebhookUrls: true } });
    [acme, globex] = await Promise.all([setUpTenant(app, 'Acme'), setUpTenant(app, 'Globex')]);
  });
  afterAll(async () => {
    await app?.close();
  });

  it('fans out to a topic: one event per subscriber, delivered, counted, then completed', async () => {
    await topicWith(app, acme, 'launch', 120);
    await acme.contact('not-subscribed');
    const hook = await app.request('POST', '/v1/webhooks', {
      token: acme.serviceKey,
      body: { url: 'http://127.0.0.1:9/hook', event_types: ['broadcast.completed'] },
    });
    expect(hook.status).toBe(201);
    const res = await broadcast(app, acme, { audience: { topic: 'launch' } });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ broadcast_id: expect.any(String), status: 'queued' });
    const id = res.body.broadcast_id;
    const done = await waitForStatus(app, acme, id, 'completed');
    expect(done).toMatchObject({
      broadcast_id: id,
      type: 'news',
      audience: { topic: 'launch' },
      targeted: 120,
      events_created: 120,
      counts: { delivered: 120, failed: 0, skipped: 0, canceled: 0, pending: 0 },
      completed_at: expect.any(String),
    });
    const perContact = await eventsPerContact(app, id);
    expect(perContact).toHaveLength(120);
    expect(perContact.every((r) => r.n === 1)).toBe(true);
    const item = await sqlOne<{ title: string; body: string }>(
      app,
      `SELECT i.title, i.body FROM inbox_items i JOIN events e ON e.id = i.event_id WHERE e.broadcast_id = $1 AND e.external_id = 'launch-7'`,
      [id],
    );
    expect(item).toEqual({ title: 'Hello for launch-7', body: 'code x' });
    // The broadcast's secret variables are gone once it is final; its events' went with their delivery.
    expect(await sqlOne(app, `SELECT secret_variables_ciphertext FROM broadcasts WHERE id = $1`, [id])).toEqual({
      secret_variables_ciphertext: null,
    });
    expect(app.logs.some((l) => l.includes('"broadcast.completed"') && l.includes(id))).toBe(true);
    // broadcast.completed went to the tenant's webhook outbox once, with the broadcast as it is shown.
    const hooks = await sql<{ payload: { type: string; data: Record<string, unknown> } }>(
      app,
      `SELECT payload FROM webhook_deliveries WHERE tenant_id = $1 AND event_type = 'broadcast.completed'`,
      [acme.tenantId],
    );
    expect(hooks).toHaveLength(1);
    expect(hooks[0]!.payload).toMatchObject({
      type: 'broadcast.completed',
      data: { broadcast_id: id, status: 'completed', events_created: 120, counts: { delivered: 120 } },
    });

    // The activity log filters by broadcast; events show it, secret variables masked.
    const log = await app.request('GET', `/v1/notifications?broadcast_id=${id}&limit=100`, { token: acme.serviceKey });
    expect(log.status).toBe(200);
    expect(log.body.items).toHaveLength(100);
    expect(log.body.items.every((e: { broadcast_id: string }) => e.broadcast_id === id)).toBe(true);
    const event = await app.request('GET', `/v1/notifications/${log.body.items[0].event_id}`, {
      token: acme.serviceKey,
    });
    expect(event.body).toMatchObject({
      broadcast_id: id,
      status: 'delivered',
      variables: { headline: 'Hello', code: '********' },
    });
    const next = await app.request(
      'GET',
      `/v1/notifications?broadcast_id=${id}&limit=100&cursor=${log.body.next_cursor}`,
      { token: acme.serviceKey },
    );
    expect(next.body.items).toHaveLength(20);
    // A trigger's event has no broadcast.
    const triggered = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: { type: 'news', recipients: ['t1'], variables: { headline: 'h', code: 'c' } },
    });
    const own = await app.request('GET', `/v1/notifications/${triggered.body.events[0].event_id}`, {
      token: acme.serviceKey,
    });
    expect(own.body.broadcast_id).toBeNull();
    expectValidationError(await app.request('GET', '/v1/notifications?broadcast_id=nope', { token: acme.serviceKey }), [
      'query',
      'broadcast_id',
    ]);
  });

  it('fans out to all contacts of the tenant only, encrypting secret variables per event', async () => {
    const tenant = await setUpTenant(app, 'Everyone');
    for (let i = 0; i < 30; i++) await tenant.contact(`everyone-${i}`);
    const res = await broadcast(app, tenant, {
      audience: { all_contacts: true },
      secret_variables: { code: 'S3CRET' },
    });
    expect(res.status).toBe(202);
    const id = res.body.broadcast_id;
    // Before delivery, each event holds its own ciphertext, bound to its id.
    const done = await waitForStatus(app, tenant, id, 'completed');
    expect(done).toMatchObject({
      audience: { all_contacts: true },
      targeted: 30,
      events_created: 30,
      counts: { delivered: 30 },
    });
    expect(
      await sqlOne(app, `SELECT count(*)::int AS n FROM events WHERE broadcast_id = $1 AND tenant_id = $2`, [
        id,
        tenant.tenantId,
      ]),
    ).toEqual({ n: 30 });
    const bodies = await sql<{ body: string }>(
      app,
      `SELECT i.body FROM inbox_items i JOIN events e ON e.id = i.event_id WHERE e.broadcast_id = $1`,
      [id],
    );
    expect(bodies.every((b) => b.body === 'code S3CRET')).toBe(true);
    expect(app.logs.join('\n')).not.toContain('S3CRET');
  });

  it('honours Idempotency-Key: the same body replays, another body is 422', async () => {
    await topicWith(app, acme, 'idem', 3);
    const first = await broadcast(app, acme, { audience: { topic: 'idem' } }, { 'idempotency-key': 'bc-1' });
    const again = await broadcast(app, acme, { audience: { topic: 'idem' } }, { 'idempotency-key': 'bc-1' });
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    const other = await broadcast(app, acme, { audience: { all_contacts: true } }, { 'idempotency-key': 'bc-1' });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('idempotency_key_reused');
    expect(
      await sqlOne(
        app,
        `SELECT count(*)::int AS n FROM broadcasts WHERE tenant_id = $1 AND audience = '{"topic": "idem"}'`,
        [acme.tenantId],
      ),
    ).toEqual({ n: 1 });
    await waitForStatus(app, acme, first.body.broadcast_id, 'completed');
    expect(await eventsPerContact(app, first.body.broadcast_id)).toHaveLength(3);
  });

  it('completes a broadcast to an empty topic with no event', async () => {
    await topicWith(app, acme, 'empty', 0);
    const res = await broadcast(app, acme, { audience: { topic: 'empty' } });
    const done = await waitForStatus(app, acme, res.body.broadcast_id, 'completed');
    expect(done).toMatchObject({
      targeted: 0,
      events_created: 0,
      counts: { delivered: 0, failed: 0, skipped: 0, canceled: 0, pending: 0 },
    });
  });

  it('waits for send_at: queued until then, its fan-out job starting at that time; cancel stops it', async () => {
    await topicWith(app, acme, 'later', 2);
    const sendAt = new Date(Date.now() + 3600_000).toISOString();
    const res = await broadcast(app, acme, { audience: { topic: 'later' }, send_at: sendAt });
    const id = res.body.broadcast_id;
    const job = await sqlOne<{ start_after: Date; state: string }>(
      app,
      `SELECT start_after, state FROM pgboss.job WHERE name = 'broadcast-fan-out' AND id = $1`,
      [id],
    );
    expect(job!.state).toBe('created');
    expect(new Date(job!.start_after).toISOString()).toBe(sendAt);
    const got = await app.request('GET', `/v1/broadcasts/${id}`, { token: acme.serviceKey });
    expect(got.body).toMatchObject({
      status: 'queued',
      send_at: sendAt,
      targeted: 0,
      events_created: 0,
      completed_at: null,
    });
    const canceled = await app.request('POST', `/v1/broadcasts/${id}/cancel`, { token: acme.serviceKey });
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ status: 'canceled', events_created: 0 });
    expect(
      (await sqlOne<{ state: string }>(
        app,
        `SELECT state FROM pgboss.job WHERE name = 'broadcast-fan-out' AND id = $1`,
        [id],
      ))!.state,
    ).toBe('cancelled');
    // Cancelling again changes nothing.
    expect((await app.request('POST', `/v1/broadcasts/${id}/cancel`, { token: acme.serviceKey })).body.status).toBe(
      'canceled',
    );
  });

  it('lists broadcasts newest first, by status, in pages', async () => {
    const page = await app.request('GET', '/v1/broadcasts?limit=2', { token: acme.serviceKey });
    expect(page.status).toBe(200);
    expect(page.body.items).toHaveLength(2);
    expect(page.body.items[0].broadcast_id > page.body.items[1].broadcast_id).toBe(true);
    const rest = await app.request('GET', `/v1/broadcasts?limit=100&cursor=${page.body.next_cursor}`, {
      token: acme.serviceKey,
    });
    expect(rest.body.items.length).toBeGreaterThan(0);
    expect(
      rest.body.items.every((b: { broadcast_id: string }) => b.broadcast_id < page.body.items[1].broadcast_id),
    ).toBe(true);
    const canceled = await app.request('GET', '/v1/broadcasts?status=canceled', { token: acme.serviceKey });
    expect(canceled.body.items.length).toBeGreaterThan(0);
    expect(canceled.body.items.every((b: { status: string }) => b.status === 'canceled')).toBe(true);
    expectValidationError(await app.request('GET', '/v1/broadcasts?status=done', { token: acme.serviceKey }), [
      'query',
      'status',
    ]);
    // Another tenant sees none of them.
    const theirs = await app.request('GET', '/v1/broadcasts', { token: globex.serviceKey });
    expect(theirs.body.items).toEqual([]);
  });

  it('answers 409 when canceling a completed broadcast', async () => {
    await topicWith(app, acme, 'finished', 1);
    const res = await broadcast(app, acme, { audience: { topic: 'finished' } });
    await waitForStatus(app, acme, res.body.broadcast_id, 'completed');
    const cancel = await app.request('POST', `/v1/broadcasts/${res.body.broadcast_id}/cancel`, {
      token: acme.serviceKey,
    });
    expect(cancel.status).toBe(409);
    expect(cancel.body.code).toBe('conflict');
  });

  it('ends a broadcast whose fan-out is out of retries as failed, with the reason and broadcast.completed', async () => {
    await topicWith(app, acme, 'doomed', 3);
    const hook = await app.request('POST', '/v1/webhooks', {
      token: acme.serviceKey,
      body: { url: 'http://127.0.0.1:9/failed', event_types: ['broadcast.completed'] },
    });
    expect(hook.status).toBe(201);
    const res = await broadcast(app, acme, {
      audience: { topic: 'doomed' },
      send_at: new Date(Date.now() + 3600_000).toISOString(),
    });
    const id = res.body.broadcast_id;
    // Its secret variables cannot be read any more (the fan-out throws), and its job is on its last attempt, due now.
    await execute(
      app.runtime.orm.em.fork(),
      `UPDATE broadcasts SET secret_variables_ciphertext = 'v1:garbage' WHERE id = $1`,
      [id],
    );
    await execute(
      app.runtime.orm.em.fork(),
      `UPDATE pgboss.job SET retry_count = retry_limit, start_after = now() WHERE name = 'broadcast-fan-out' AND id = $1`,
      [id],
    );
    const failed = await waitForStatus(app, acme, id, 'failed');
    expect(failed).toMatchObject({
      status: 'failed',
      events_created: 0,
      completed_at: expect.any(String),
      failure_reason: expect.stringMatching(/^the fan-out gave up after its retries: ./),
    });
    expect(await sqlOne(app, `SELECT secret_variables_ciphertext FROM broadcasts WHERE id = $1`, [id])).toEqual({
      secret_variables_ciphertext: null,
    });
    const hooks = await sql<{ payload: { data: Record<string, unknown> } }>(
      app,
      `SELECT d.payload FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id WHERE w.url = 'http://127.0.0.1:9/failed' AND d.event_type = 'broadcast.completed'`,
    );
    expect(hooks.map((h) => h.payload.data)).toEqual([
      expect.objectContaining({ broadcast_id: id, status: 'failed', failure_reason: failed.failure_reason }),
    ]);
    expect(app.logs.some((l) => l.includes('"broadcast.failed"') && l.includes(id))).toBe(true);
    // A failed broadcast is final: it cannot be canceled, and lists under its status.
    const cancel = await app.request('POST', `/v1/broadcasts/${id}/cancel`, { token: acme.serviceKey });
    expect(cancel.status).toBe(409);
    const listed = await app.request('GET', '/v1/broadcasts?status=failed', { token: acme.serviceKey });
    expect(listed.body.items.map((b: { broadcast_id: string }) => b.broadcast_id)).toEqual([id]);
  });

  it('refuses what a trigger refuses (422), an unknown topic (422) and an archived tenant (409)', async () => {
    expectValidationError(await broadcast(app, acme, { type: 'nope', audience: { all_contacts: true } }), [
      'body',
      'type',
    ]);
    expectValidationError(await broadcast(app, acme, { audience: { topic: 'no-such-topic' } }), [
      'body',
      'audience',
      'topic',
    ]);
    expectValidationError(await broadcast(app, acme, { audience: { all_contacts: true }, brand: 'nope' }), [
      'body',
      'brand',
    ]);
    expectValidationError(await broadcast(app, acme, { audience: { all_contacts: true }, variables: {} }), [
      'body',
      'variables',
      'headline',
    ]);
    expectValidationError(
      await broadcast(app, acme, {
        audience: { all_contacts: true },
        variables: { headline: 'a', code: 'b' },
        secret_variables: { code: 'c' },
      }),
      ['body', 'secret_variables', 'code'],
    );
    expectValidationError(await broadcast(app, acme, { audience: { all_contacts: false } }), ['body', 'audience']);
    expectValidationError(await broadcast(app, acme, { audience: { topic: 'a', all_contacts: true } }), [
      'body',
      'audience',
    ]);
    expectValidationError(await broadcast(app, acme, { audience: { all_contacts: true }, send_at: 'tomorrow' }), [
      'body',
      'send_at',
    ]);
    expectValidationError(await broadcast(app, acme, { audience: { all_contacts: true }, channels: ['fax'] }), [
      'body',
      'channels',
      0,
    ]);
    const archived = await setUpTenant(app, 'Archived');
    await execute(app.runtime.orm.em.fork(), `UPDATE tenants SET archived_at = now() WHERE id = $1`, [
      archived.tenantId,
    ]);
    const res = await broadcast(app, archived, { audience: { all_contacts: true } });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('tenant_archived');
    expect(
      await sqlOne(app, `SELECT count(*)::int AS n FROM broadcasts WHERE tenant_id = $1`, [archived.tenantId]),
    ).toEqual({ n: 0 });
  });

  it('keeps tenants apart (404) and takes a tenant credential only (401, 403 for a contact token)', async () => {
    const res = await broadcast(app, globex, { audience: { all_contacts: true } });
    const id = res.body.broadcast_id;
    expect((await app.request('GET', `/v1/broadcasts/${id}`, { token: acme.serviceKey })).status).toBe(404);
    expect((await app.request('POST', `/v1/broadcasts/${id}/cancel`, { token: acme.serviceKey })).status).toBe(404);
    expect((await app.request('GET', `/v1/broadcasts/${crypto.randomUUID()}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
    expectValidationError(await app.request('GET', '/v1/broadcasts/not-a-uuid', { token: acme.serviceKey }), [
      'path',
      'broadcast_id',
    ]);
    await expectManagementOnly(app, acme, 'POST', '/v1/broadcasts', {
      type: 'news',
      audience: { all_contacts: true },
      variables: { headline: 'x' },
    });
    await expectManagementOnly(app, acme, 'GET', '/v1/broadcasts');
    await expectManagementOnly(app, acme, 'GET', `/v1/broadcasts/${id}`);
    await expectManagementOnly(app, acme, 'POST', `/v1/broadcasts/${id}/cancel`);
    // A console admin of the tenant may broadcast.
    const admin = (await addUser(app, globex.tenantId, 'admin', true)).token;
    const byAdmin = await app.request('POST', '/v1/broadcasts', {
      token: admin,
      body: { type: 'news', audience: { all_contacts: true }, variables: { headline: 'x' } },
    });
    expect(byAdmin.status).toBe(202);
  });
});

describe('the fan-out, run by the test (no worker until the end)', () => {
  let app: TestApp;
  let acme: TenantFixture;
  let worker: TestApp | null = null;

  beforeAll(async () => {
    app = await startTestApp({ role: 'api' });
    acme = await setUpTenant(app, 'Acme');
  });
  afterAll(async () => {
    await worker?.close();
    await app?.close();
  });

  const row = (id: string) =>
    sqlOne<{ status: string; events_created: number; targeted: number; fanned_out_at: Date | null }>(
      app,
      `SELECT status, events_created, targeted, fanned_out_at FROM broadcasts WHERE id = $1`,
      [id],
    );

  /** Runs the fan-out in pages of 10, with a pause between pages; resolves once `pages` pages are written. */
  function slowFanOut(id: string, pages: number): { running: Promise<void>; reached: Promise<void> } {
    const reached = signal();
    const running = fanOutBroadcast(app.runtime, id, { pageSize: 10, pauseMs: 300 });
    void eventually(
      async () => {
        const current = await row(id);
        return current!.events_created >= pages * 10 || (current!.status !== 'running' && current!.status !== 'queued');
      },
      { timeoutMs: 60_000, intervalMs: 10 },
    ).then(() => reached.raise());
    return { running, reached: reached.raised };
  }

  let deletedTopicBroadcast = '';

  it("writes each event's secret variables under the event's own additional data", async () => {
    await acme.contact('secret-1');
    const id = (await broadcast(app, acme, { audience: { all_contacts: true }, secret_variables: { code: 'abc' } }))
      .body.broadcast_id;
    await fanOutBroadcast(app.runtime, id);
    const event = await sqlOne<{ id: string; secret_variables_ciphertext: string }>(
      app,
      `SELECT id, secret_variables_ciphertext FROM events WHERE broadcast_id = $1`,
      [id],
    );
    expect(
      JSON.parse(app.runtime.keyRing.decrypt(event!.secret_variables_ciphertext, secretVariablesAad(event!.id))),
    ).toEqual({ code: 'abc' });
    const stored = await sqlOne<{ secret_variables_ciphertext: string }>(
      app,
      `SELECT secret_variables_ciphertext FROM broadcasts WHERE id = $1`,
      [id],
    );
    expect(stored!.secret_variables_ciphertext).not.toContain('abc');
  });

  it('cancels mid-fan-out: no event after the cancel, the undelivered ones canceled with their jobs', async () => {
    await topicWith(app, acme, 'big', 100);
    const id = (await broadcast(app, acme, { audience: { topic: 'big' } })).body.broadcast_id;
    const fanOut = slowFanOut(id, 2);
    await fanOut.reached;
    const canceled = await app.request('POST', `/v1/broadcasts/${id}/cancel`, { token: acme.serviceKey });
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe('canceled');
    await fanOut.running;
    const after = await row(id);
    expect(after!.status).toBe('canceled');
    expect(after!.targeted).toBe(100);
    expect(after!.events_created).toBeGreaterThanOrEqual(20);
    expect(after!.events_created).toBeLessThan(100);
    const events = await sql<{ status: string; n: number }>(
      app,
      `SELECT status, count(*)::int AS n FROM events WHERE broadcast_id = $1 GROUP BY status`,
      [id],
    );
    // No worker has fetched anything: every event is canceled, and so is every delivery job of them.
    expect(events).toEqual([{ status: 'canceled', n: after!.events_created }]);
    const jobs = await sql<{ state: string }>(
      app,
      `SELECT DISTINCT state FROM pgboss.job WHERE name = 'deliver-event' AND id IN (SELECT id FROM events WHERE broadcast_id = $1)`,
      [id],
    );
    expect(jobs).toEqual([{ state: 'cancelled' }]);
    const got = await app.request('GET', `/v1/broadcasts/${id}`, { token: acme.serviceKey });
    expect(got.body.counts).toEqual({
      delivered: 0,
      failed: 0,
      skipped: 0,
      canceled: after!.events_created,
      pending: 0,
    });
    // A fan-out run again (a retried job) writes nothing.
    await fanOutBroadcast(app.runtime, id);
    expect((await row(id))!.events_created).toBe(after!.events_created);
  });

  it('ends the fan-out where a topic deleted during it leaves it', async () => {
    await topicWith(app, acme, 'doomed', 100);
    const id = (await broadcast(app, acme, { audience: { topic: 'doomed' } })).body.broadcast_id;
    deletedTopicBroadcast = id;
    const fanOut = slowFanOut(id, 2);
    await fanOut.reached;
    expect((await app.request('DELETE', '/v1/topics/doomed', { token: acme.serviceKey })).status).toBe(204);
    await fanOut.running;
    const after = await row(id);
    expect(after!.status).toBe('running');
    expect(after!.fanned_out_at).not.toBeNull();
    expect(after!.events_created).toBeGreaterThanOrEqual(20);
    expect(after!.events_created).toBeLessThan(100);
    expect((await eventsPerContact(app, id)).every((r) => r.n === 1)).toBe(true);
    // Its events are still to deliver: not complete yet.
    expect(await completeBroadcastIfDone(app.runtime, app.runtime.orm.em.fork(), id)).toBe(false);
  });

  it('writes no second event for a contact when pages are written again (the unique index, not the cursor)', async () => {
    await topicWith(app, acme, 'twice', 25);
    const id = (await broadcast(app, acme, { audience: { topic: 'twice' } })).body.broadcast_id;
    await fanOutBroadcast(app.runtime, id, { pageSize: 10 });
    // As if the cursor had been lost: every page again, and two runs at once.
    await execute(
      app.runtime.orm.em.fork(),
      `UPDATE broadcasts SET fan_out_cursor = NULL, fanned_out_at = NULL WHERE id = $1`,
      [id],
    );
    await Promise.all([
      fanOutBroadcast(app.runtime, id, { pageSize: 7 }),
      fanOutBroadcast(app.runtime, id, { pageSize: 10 }),
    ]);
    expect((await row(id))!.events_created).toBe(25);
    const perContact = await eventsPerContact(app, id);
    expect(perContact).toHaveLength(25);
    expect(perContact.every((r) => r.n === 1)).toBe(true);
    // Every event is in exactly one delivery job.
    const jobs = await sqlOne<{ n: number; distinct_events: number }>(
      app,
      `SELECT count(*)::int AS n, count(DISTINCT ev)::int AS distinct_events FROM pgboss.job j CROSS JOIN LATERAL jsonb_array_elements_text(j.data->'event_ids') AS ev
        WHERE j.name = 'deliver-event' AND ev::uuid IN (SELECT id FROM events WHERE broadcast_id = $1)`,
      [id],
    );
    expect(jobs).toEqual({ n: 25, distinct_events: 25 });
  });

  let bulkBroadcast = '';
  let bulkTriggerEvent = '';

  it("enqueues its delivery jobs as bulk jobs: a lower priority than a trigger's, and marked in their data", async () => {
    await topicWith(app, acme, 'bulk', 3);
    const id = (await broadcast(app, acme, { audience: { topic: 'bulk' } })).body.broadcast_id;
    await fanOutBroadcast(app.runtime, id);
    const triggered = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: { type: 'news', recipients: ['bulk-trigger'], variables: { headline: 'h', code: 'c' } },
    });
    expect(triggered.status).toBe(202);
    bulkBroadcast = id;
    bulkTriggerEvent = triggered.body.events[0].event_id;
    const jobs = await sql<{ origin: string; priority: number; bulk: boolean | null }>(
      app,
      `SELECT CASE WHEN e.broadcast_id IS NULL THEN 'trigger' ELSE 'broadcast' END AS origin, j.priority, (j.data->>'bulk')::boolean AS bulk
         FROM pgboss.job j JOIN events e ON e.id = (j.data->'event_ids'->>0)::uuid
        WHERE j.name = 'deliver-event' AND (e.broadcast_id = $1 OR e.id = $2) GROUP BY 1, 2, 3`,
      [id, triggered.body.events[0].event_id],
    );
    expect(jobs.sort((a, b) => a.origin.localeCompare(b.origin))).toEqual([
      { origin: 'broadcast', priority: -1, bulk: true },
      { origin: 'trigger', priority: 0, bulk: null },
    ]);
  });

  it('an empty topic fans out to nothing and completes at once', async () => {
    await topicWith(app, acme, 'nobody', 0);
    const id = (await broadcast(app, acme, { audience: { topic: 'nobody' } })).body.broadcast_id;
    await fanOutBroadcast(app.runtime, id);
    expect(await completeBroadcastIfDone(app.runtime, app.runtime.orm.em.fork(), id)).toBe(true);
    expect(await row(id)).toMatchObject({ status: 'completed', events_created: 0, targeted: 0 });
  });

  it("a worker then delivers the deleted topic's events and completes that broadcast", async () => {
    worker = await startTestApp({
      role: 'worker',
      database: app.database,
      http: false,
      // The next test reads the first batch's shared start. One fetch at a time: concurrent fetches
      // skip each other's locked rows and can leave the trigger's job a batch of its own. And a worker
      // stalled on a loaded machine must not lose that batch to the lost-job check, whose retry would
      // overwrite the start.
      config: { encryptionKeys: app.config.encryptionKeys, lostWorkerSeconds: 120, workerConcurrency: 1 },
    });
    const done = await waitForStatus(app, acme, deletedTopicBroadcast, 'completed');
    expect(done.counts.delivered).toBe(done.events_created);
    expect(done.events_created).toBeLessThan(100);
  });

  it("delivers the first batch it fetched, a trigger's job filled up with broadcast jobs, whole and once", async () => {
    // pg-boss stamps a fetch's jobs with one started_on: the trigger's job shares it with broadcast jobs.
    const batchedWith = await sqlOne<{ bulk_jobs: number; attempt: string }>(
      app,
      `SELECT count(b.id)::int AS bulk_jobs, concat_ws(' ', t.state, 'retry_count', t.retry_count, t.output::text) AS attempt
         FROM pgboss.job t LEFT JOIN pgboss.job b ON b.name = t.name AND b.started_on = t.started_on AND b.priority < 0
        WHERE t.name = 'deliver-event' AND t.data->'event_ids' ? $1 GROUP BY t.id, t.state, t.retry_count, t.output::text`,
      [bulkTriggerEvent],
    );
    expect(batchedWith!.bulk_jobs, `the trigger's job: ${batchedWith!.attempt}`).toBeGreaterThan(0);
    const done = await waitForStatus(app, acme, bulkBroadcast, 'completed');
    expect(done.counts).toMatchObject({ delivered: 3, failed: 0, pending: 0 });
    const items = await sql<{ event_id: string; n: number }>(
      app,
      `SELECT e.id AS event_id, count(i.id)::int AS n FROM events e LEFT JOIN inbox_items i ON i.event_id = e.id
        WHERE e.broadcast_id = $1 OR e.id = $2 GROUP BY e.id`,
      [bulkBroadcast, bulkTriggerEvent],
    );
    expect(items.map((i) => i.n)).toEqual([1, 1, 1, 1]);
    expect(
      (await app.request('GET', `/v1/notifications/${bulkTriggerEvent}`, { token: acme.serviceKey })).body.status,
    ).toBe('delivered');
  });
});

describe('a worker killed during the fan-out', () => {
  it('resumes from the cursor and ends with exactly one event per contact', { timeout: 180_000 }, async () => {
    const app = await startTestApp({ role: 'api' });
    const home = mkdtempSync(join(tmpdir(), 'herald-broadcast-worker-'));
    const children: ChildProcess[] = [];
    const mayRelease = signal();
    try {
      const fx = await setUpTenant(app, 'Crash');
      const count = 12_000; // pages of 5,000: the kill lands while the third page waits
      await upsertContactCounts(
        app.runtime.orm.em.fork(),
        fx.tenantId,
        Array.from({ length: count }, (_, i) => ({ external_id: `crash-${i}` })),
      );
      expect(
        (await app.request('POST', '/v1/topics', { token: fx.serviceKey, body: { key: 'all', name: 'all' } })).status,
      ).toBe(201);
      await execute(
        app.runtime.orm.em.fork(),
        `INSERT INTO topic_subscriptions (topic_id, contact_id, tenant_id) SELECT t.id, c.id, c.tenant_id FROM topics t JOIN contacts c ON c.tenant_id = t.tenant_id WHERE t.tenant_id = $1`,
        [fx.tenantId],
      );
      // The third page's first contact is held (FOR UPDATE): writing its event waits for the test.
      const third = (await sqlOne<{ id: string }>(
        app,
        `SELECT contact_id AS id FROM topic_subscriptions WHERE tenant_id = $1 ORDER BY contact_id OFFSET 10000 LIMIT 1`,
        [fx.tenantId],
      ))!.id;
      const held = signal();
      let holderPid = 0;
      const holding = app.runtime.orm.em.fork().transactional(async (tx) => {
        holderPid = (await queryOne<{ pid: number }>(tx, `SELECT pg_backend_pid() AS pid`))!.pid;
        await execute(tx, `SELECT 1 FROM contacts WHERE id = $1 FOR UPDATE`, [third]);
        held.raise();
        await mayRelease.raised;
      });
      await held.raised;
      const id = (await broadcast(app, fx, { audience: { topic: 'all' } })).body.broadcast_id;
      // A killed worker's jobs come back after this long without a heartbeat (5 s in production).
      const env = {
        DATABASE_URL: app.database.url,
        HERALD_HOME: home,
        HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys,
        HERALD_LOG_LEVEL: 'warn',
        HERALD_LOST_WORKER_SECONDS: '3',
      };
      const first = startWorkerProcess(env);
      children.push(first);
      const created = async () =>
        (await sqlOne<{ n: number }>(app, `SELECT events_created AS n FROM broadcasts WHERE id = $1`, [id]))!.n;
      const waiting = async () =>
        (await sqlOne<{ n: number }>(
          app,
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`,
          [holderPid],
        ))!.n;
      await eventually(async () => (await created()) >= 10_000 && (await waiting()) > 0, {
        timeoutMs: 90_000,
        message: 'the fan-out did not reach its third page',
      });
      first.kill('SIGKILL');
      await once(first, 'exit');
      await execute(
        app.runtime.orm.em.fork(),
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`,
        [holderPid],
      );
      mayRelease.raise();
      await holding;
      expect(await created()).toBe(10_000);
      const job = await sqlOne<{ state: string }>(
        app,
        `SELECT state FROM pgboss.job WHERE name = 'broadcast-fan-out' AND id = $1`,
        [id],
      );
      expect(job!.state).toBe('active'); // it died holding the fan-out
      const deadWorkersJobs = await activeJobs(app, 'broadcast-fan-out');
      children.push(startWorkerProcess(env));
      // The dead worker's job stops heartbeating; the new worker's lost-job check hands it back.
      await untilHandedBack(app, 'broadcast-fan-out', deadWorkersJobs);
      const done = await waitForStatus(app, fx, id, 'completed', 120_000);
      expect(done).toMatchObject({ targeted: count, events_created: count, counts: { delivered: count, pending: 0 } });
      const perContact = await eventsPerContact(app, id);
      expect(perContact).toHaveLength(count);
      expect(perContact.every((r) => r.n === 1)).toBe(true);
      expect(
        await sqlOne(
          app,
          `SELECT count(*)::int AS n FROM inbox_items i JOIN events e ON e.id = i.event_id WHERE e.broadcast_id = $1`,
          [id],
        ),
      ).toEqual({ n: count });
    } finally {
      mayRelease.raise();
      killAll(children);
      await app.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

// The delivery workers: fan-out to the inbox (item + stream events), channel decisions (defaults,
// requested channels, opt-outs under the type's policy, destinations), template failures, retries,
// the dead-letter queue, per-delivery idempotency and the archived-tenant rule.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EntityManager } from '@mikro-orm/postgresql';
import { HERALD_BIN } from '../../support/cli.ts';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { eventually } from '../../support/eventually.ts';
import {
  activeJobs,
  insertEmailTemplate,
  insertInboxTemplate,
  createTenantFixture,
  insertNotificationType,
  sql,
  sqlOne,
  untilHandedBack,
  untilLockWait,
  waitForFinal,
  deliveryJobsOf,
  type TenantFixture,
} from '../../support/fixtures.ts';
import { signal } from '../../support/signal.ts';
import { execute, queryOne } from '../../../server/base/db/sql.ts';
import { deliverEvent } from '../../../server/delivery/runs/event.ts';
import { recordOutcome, recordOutcomes, storeBatch } from '../../../server/delivery/stages/store.ts';
import { storeInboxItem } from '../../../server/channels/inbox/channel.ts';
import { deliverInboxBatch } from '../../../server/delivery/runs/batch.ts';
import { loadEventLocked, loadEvents } from '../../../server/delivery/stages/load.ts';
import { planDeliveries, type PlanInput } from '../../../server/delivery/stages/plan.ts';
import {
  newTemplateCache,
  renderEmailDelivery,
  renderInboxDelivery,
} from '../../../server/channels/render-delivery.ts';
import { UnfilledSlotError } from '../../../server/base/template-engine.ts';
import { findBrand } from '../../../server/channels/resolve.ts';
import {
  DELIVER_EVENT_DEAD_QUEUE,
  DELIVER_EVENT_QUEUE,
  eventIdsOf,
  REMOTE_EVENTS_PER_DELIVERY_JOB,
  type DeliverEventJob,
} from '../../../server/delivery/queues.ts';
import { deliverEventJob } from '../../../server/jobs/deliver-event.ts';
import type { Channel } from '../../../server/schemas/common.ts';
import { pushChannel, pushOutcome } from '../../../server/channels/push/channel.ts';
import { emailOutcome } from '../../../server/channels/email/channel.ts';
import { CONTACT_COLUMNS, type ContactRow } from '../../../server/base/db/contacts.ts';
import { newId } from '../../../server/base/ids.ts';
import { readStreamLog } from '../../../server/channels/inbox/log.ts';
import type { PushOutcome } from '../../../server/channels/push/messages.ts';

let api: TestApp;
let worker: TestApp | null = null;
let acme: TenantFixture;

beforeAll(async () => {
  // The API process does not deliver; a separate worker process (same database) does, once started.
  api = await startTestApp({ role: 'api' });
  acme = await createTenantFixture(api, 'Acme');
  await insertNotificationType(api, acme.tenantId, { key: 'plain' });
  await insertInboxTemplate(api, acme.tenantId, {
    type: 'plain',
    title: 'Hi {{ contact.external_id }}',
    content: 'Hello from {{ name }}',
    actionUrl: 'https://app.test/{{ contact.external_id }}',
  });
});
afterAll(async () => {
  await worker?.close();
  await api?.close();
});

async function trigger(body: Record<string, unknown>): Promise<string[]> {
  const res = await api.request('POST', '/v1/notifications', {
    token: acme.serviceKey,
    body: { type: 'plain', ...body },
  });
  expect(res.status).toBe(202);
  return res.body.events.map((e: { event_id: string }) => e.event_id);
}

const deliveriesOf = (eventId: string) =>
  sql<{ channel: string; status: string; reason: string | null; attempts: number; last_error: string | null }>(
    api,
    `SELECT channel, status, reason, attempts, last_error FROM deliveries WHERE event_id = $1 ORDER BY channel`,
    [eventId],
  );

/** The contact's stream log, as its streams replay it. */
const streamLogOf = (contactId: string) => readStreamLog(api.runtime.orm.em.fork(), contactId, 0n, 1000);

// Before any worker process starts (the next describe starts one): these tests fetch the jobs themselves.
describe('batch fast path: job completion', () => {
  const jobStates = (ids: string[]) =>
    sql<{ id: string; state: string; retry_count: number }>(
      api,
      `SELECT id::text, state, retry_count FROM pgboss.job WHERE name = $1 AND id = ANY($2::uuid[]) ORDER BY id`,
      [DELIVER_EVENT_QUEUE, ids],
    );

  it('completes the jobs of the events it stores in the transaction that stores them', async () => {
    const ids = await trigger({ recipients: ['done_1', 'done_2'], variables: { name: 'x' } });
    const jobs = await api.runtime.boss!.fetch<DeliverEventJob>(DELIVER_EVENT_QUEUE, { batchSize: 10 });
    // Inbox-only events of one trigger share a job.
    expect(jobs.map((j) => eventIdsOf(j.data).sort())).toEqual([[...ids].sort()]);
    // pg-boss's own completion (after a handler returns) is never called here.
    expect((await deliverInboxBatch(api.runtime, jobs)).settled).toEqual(new Set(ids));
    expect((await jobStates(jobs.map((j) => j.id))).map((j) => j.state)).toEqual(['completed']);
    expect((await waitForFinal(api, ids)).map((e) => e.status)).toEqual(['delivered', 'delivered']);
  });

  it('completes only the jobs whose rows it can lock at once: one held elsewhere (a heartbeat) stays active, and the store does not wait for it', async () => {
    const [held] = await trigger({ recipients: ['hb_1'], variables: { name: 'x' } });
    const [free] = await trigger({ recipients: ['hb_2'], variables: { name: 'x' } });
    const jobs = await api.runtime.boss!.fetch<DeliverEventJob>(DELIVER_EVENT_QUEUE, { batchSize: 10 });
    expect(jobs.map((j) => j.id).sort()).toEqual([held, free].sort());
    const locked = signal();
    const release = signal();
    const holder = api.runtime.orm.em.fork().transactional(async (tx) => {
      await execute(tx, `UPDATE pgboss.job SET heartbeat_on = now() WHERE name = $1 AND id = $2`, [
        DELIVER_EVENT_QUEUE,
        held,
      ]);
      locked.raise();
      await release.raised;
    });
    await locked.raised;
    try {
      expect((await deliverInboxBatch(api.runtime, jobs)).settled).toEqual(new Set([held, free]));
    } finally {
      release.raise();
      await holder;
    }
    expect(Object.fromEntries((await jobStates([held!, free!])).map((j) => [j.id, j.state]))).toEqual({
      [held!]: 'active',
      [free!]: 'completed',
    });
    expect((await waitForFinal(api, [held!, free!])).map((e) => e.status)).toEqual(['delivered', 'delivered']);
    // pg-boss's own completion, once the handler returns, settles the one left.
    await api.runtime.boss!.complete(DELIVER_EVENT_QUEUE, { id: held!, retryCount: 0 });
    expect((await jobStates([held!])).map((j) => j.state)).toEqual(['completed']);
  });

  it('leaves a job that was fetched again since (a newer attempt) to that attempt, and still delivers once', async () => {
    const [id] = await trigger({ recipients: ['done_3'], variables: { name: 'x' } });
    const jobs = await api.runtime.boss!.fetch<DeliverEventJob>(DELIVER_EVENT_QUEUE, { batchSize: 10 });
    expect(jobs.map((j) => j.id)).toEqual([id]);
    // As if this attempt expired and another worker fetched the job again.
    await execute(
      api.runtime.orm.em.fork(),
      `UPDATE pgboss.job SET retry_count = retry_count + 1 WHERE name = $1 AND id = $2`,
      [DELIVER_EVENT_QUEUE, id],
    );
    expect((await deliverInboxBatch(api.runtime, jobs)).settled).toEqual(new Set([id]));
    expect(await jobStates([id!])).toEqual([{ id, state: 'active', retry_count: 1 }]);
    expect(await sql(api, `SELECT 1 FROM inbox_items WHERE event_id = $1`, [id])).toHaveLength(1);
    // The newer attempt finds the event final and settles its job.
    expect((await deliverInboxBatch(api.runtime, [{ ...jobs[0]!, retryCount: 1 }])).settled).toEqual(new Set([id]));
    await api.runtime.boss!.complete(DELIVER_EVENT_QUEUE, { id: id!, retryCount: 1 });
    expect(await jobStates([id!])).toEqual([{ id, state: 'completed', retry_count: 1 }]);
    expect(await sql(api, `SELECT 1 FROM inbox_items WHERE event_id = $1`, [id])).toHaveLength(1);
  });

  it('stores nothing when an event it loaded as queued moved on before the store (waiting for the transaction that holds it)', async () => {
    const [id] = await trigger({ recipients: ['moved_1'], variables: { name: 'x' } });
    const jobs = await api.runtime.boss!.fetch<DeliverEventJob>(DELIVER_EVENT_QUEUE, { batchSize: 10 });
    expect(jobs.map((j) => j.id)).toEqual([id]);
    // Another transaction holds the event (as the dead-letter worker's would) and fails it: the batch
    // loads the event as still queued, renders, and its store waits for that transaction.
    const mayCommit = signal();
    const hasUpdated = signal();
    const other = api.runtime.orm.em.fork().transactional(async (tx) => {
      await execute(tx, `UPDATE events SET status = 'failed', updated_at = now() WHERE id = $1`, [id]);
      hasUpdated.raise();
      await mayCommit.raised;
    });
    await hasUpdated.raised;
    let committed = false;
    let settledWhileHeld = false;
    // Its outcome is taken at once (a rejection nobody handled yet would fail the run).
    const outcome = deliverInboxBatch(api.runtime, jobs).then(
      () => 'stored',
      (error: Error) => error.message,
    );
    void outcome.finally(() => (settledWhileHeld = !committed));
    // Only once the batch's store waits on the held row (a fixed pause let a slow batch load after the commit).
    await untilLockWait(api);
    committed = true;
    mayCommit.raise();
    await other;
    expect(await outcome).toMatch(/an event of the batch has started elsewhere/);
    expect(settledWhileHeld).toBe(false);
    // Nothing of the batch stayed: no delivery, item or stream event, the event as the other left it, the job still active.
    expect(await deliveriesOf(id!)).toEqual([]);
    expect(await sql(api, `SELECT 1 FROM inbox_items WHERE event_id = $1`, [id])).toHaveLength(0);
    const { contact_id: contactId } = (await sqlOne<{ contact_id: string }>(
      api,
      `SELECT contact_id::text FROM events WHERE id = $1`,
      [id],
    ))!;
    expect(await streamLogOf(contactId)).toEqual([]);
    expect((await sqlOne<{ status: string }>(api, `SELECT status FROM events WHERE id = $1`, [id]))!.status).toBe(
      'failed',
    );
    expect(await jobStates([id!])).toEqual([{ id, state: 'active', retry_count: 0 }]);
    await api.runtime.boss!.complete(DELIVER_EVENT_QUEUE, { id: id!, retryCount: 0 });
  });

  it("loads a batch of interleaved kinds (type, brand) with each event's own type and brand, as it loads them one by one", async () => {
    await insertNotificationType(api, acme.tenantId, {
      key: 'kinds_other',
      channels: { inbox: true, email: true },
      optOut: false,
    });
    const branded = await api.request('POST', '/v1/brandings', {
      token: acme.serviceKey,
      body: { key: 'kinds-red', values: { colour: '#aa0000' } },
    });
    expect(branded.status).toBe(201);
    // One event per trigger, so that their ids (in trigger order) interleave the kinds.
    const kinds = [
      {},
      { type: 'kinds_other' },
      { brand: 'kinds-red' },
      {},
      { type: 'kinds_other', brand: 'kinds-red' },
      { brand: 'kinds-red' },
      { type: 'kinds_other' },
      {},
    ];
    const ids: string[] = [];
    for (const [i, kind] of kinds.entries())
      ids.push(...(await trigger({ recipients: [`kinds_${i}`], variables: { name: 'x' }, ...kind })));
    const em = api.runtime.orm.em.fork();
    const batch = await loadEvents(em, ids);
    expect(
      batch.map((event) => [event.type_key, event.brand?.key, event.opt_out, event.channel_defaults?.email ?? false]),
    ).toEqual(kinds.map((kind) => [kind.type ?? 'plain', kind.brand ?? 'default', !kind.type, Boolean(kind.type)]));
    const oneByOne = await em.transactional(async (tx) => Promise.all(ids.map((id) => loadEventLocked(tx, id))));
    expect(batch).toEqual(oneByOne);
    // And delivers them, leaving no job for the tests after this one to fetch. The other type has no
    // inbox template: its events are skipped.
    const jobs = await api.runtime.boss!.fetch<DeliverEventJob>(DELIVER_EVENT_QUEUE, { batchSize: 10 });
    expect(jobs.flatMap((job) => eventIdsOf(job.data)).sort()).toEqual([...ids].sort());
    await deliverEventJob.handler(jobs, api.runtime);
    const statuses = new Map((await waitForFinal(api, ids)).map((event) => [event.id, event.status]));
    expect(ids.map((id) => statuses.get(id))).toEqual(kinds.map((kind) => (kind.type ? 'skipped' : 'delivered')));
  });

  it('delivers a job of the shape enqueued before jobs carried several events ({ event_id })', async () => {
    const [id] = await trigger({ recipients: ['legacy_1'], variables: { name: 'x' } });
    await execute(
      api.runtime.orm.em.fork(),
      `UPDATE pgboss.job SET data = jsonb_build_object('event_id', id::text) WHERE name = $1 AND id = $2`,
      [DELIVER_EVENT_QUEUE, id],
    );
    const jobs = await api.runtime.boss!.fetch<DeliverEventJob>(DELIVER_EVENT_QUEUE, { batchSize: 10 });
    expect(jobs.map((j) => j.data)).toEqual([{ event_id: id }]);
    await deliverEventJob.handler(jobs, api.runtime);
    expect(await jobStates([id!])).toEqual([{ id, state: 'completed', retry_count: 0 }]);
    expect(await sql(api, `SELECT 1 FROM inbox_items WHERE event_id = $1`, [id])).toHaveLength(1);
    expect((await waitForFinal(api, [id!]))[0]!.status).toBe('delivered');
  });
});

describe('archived tenant (fan-out skips it)', () => {
  it('skips events queued before the tenant was archived', async () => {
    const t = await createTenantFixture(api, 'Soon archived');
    await insertNotificationType(api, t.tenantId, { key: 'plain' });
    await insertInboxTemplate(api, t.tenantId, { type: 'plain', title: 'x', content: 'y' });
    const res = await api.request('POST', '/v1/notifications', {
      token: t.serviceKey,
      body: { type: 'plain', recipients: ['a', 'b'] },
    });
    expect(res.status).toBe(202);
    await execute(api.runtime.orm.em.fork(), `UPDATE tenants SET archived_at = now() WHERE id = $1`, [t.tenantId]);
    const ids = res.body.events.map((e: { event_id: string }) => e.event_id);
    worker = await startTestApp({
      role: 'worker',
      http: false,
      database: api.database,
      config: { encryptionKeys: api.config.encryptionKeys },
    });
    const final = await waitForFinal(api, ids);
    expect(final.map((e) => e.status)).toEqual(['skipped', 'skipped']);
    expect(await deliveriesOf(ids[0])).toEqual([
      { channel: 'inbox', status: 'skipped', reason: 'tenant_archived', attempts: 0, last_error: null },
    ]);
    expect(await sql(api, `SELECT 1 FROM inbox_items WHERE tenant_id = $1`, [t.tenantId])).toHaveLength(0);
  });
});

describe('inbox delivery', () => {
  it('delivers a trigger for three recipients to their inboxes and streams', async () => {
    const ids = await trigger({
      recipients: ['in_1', 'in_2', { external_id: 'in_3', name: 'Three' }],
      variables: { name: 'Acme' },
    });
    const final = await waitForFinal(api, ids);
    expect(final.every((e) => e.status === 'delivered')).toBe(true);
    const items = await sql<{ title: string; body: string; action_url: string; event_id: string; contact_id: string }>(
      api,
      `SELECT title, body, action_url, event_id::text, contact_id::text FROM inbox_items WHERE event_id = ANY($1::uuid[]) ORDER BY title`,
      [ids],
    );
    expect(items.map((i) => [i.title, i.body, i.action_url])).toEqual([
      ['Hi in_1', 'Hello from Acme', 'https://app.test/in_1'],
      ['Hi in_2', 'Hello from Acme', 'https://app.test/in_2'],
      ['Hi in_3', 'Hello from Acme', 'https://app.test/in_3'],
    ]);
    for (const item of items) {
      const stream = await streamLogOf(item.contact_id);
      // The counts are derived by the stream hub for open streams, not stored (stream.test.ts).
      expect(stream.map((s) => s.kind)).toEqual(['notification']);
      expect(stream[0]!.payload).toMatchObject({
        event_id: item.event_id,
        type: 'plain',
        title: item.title,
        body: item.body,
        read_at: null,
      });
    }
    for (const id of ids)
      expect(await deliveriesOf(id)).toEqual([
        { channel: 'inbox', status: 'delivered', reason: null, attempts: 1, last_error: null },
      ]);
    // Delivered by the batch fast path, not the per-event fallback.
    expect(worker!.logs.filter((l) => l.includes('fell back'))).toEqual([]);
  });

  it('refuses to store a batch over an event already delivered, and stores none of it', async () => {
    const [id] = await trigger({ recipients: ['again_1'], variables: { name: 'x' } });
    await waitForFinal(api, [id!]);
    const event = (await sqlOne<{ tenant_id: string; contact_id: string; status: string }>(
      api,
      `SELECT tenant_id::text, contact_id::text, status FROM events WHERE id = $1`,
      [id],
    ))!;
    const delivery = (await sqlOne<{ channel: string; destination: string }>(
      api,
      `SELECT channel, destination FROM deliveries WHERE event_id = $1`,
      [id],
    ))!;
    const deliveryId = newId();
    const item = {
      id: newId(),
      tenant_id: event.tenant_id,
      contact_id: event.contact_id,
      event_id: id!,
      delivery_id: deliveryId,
      type_key: 'plain',
      title: 't',
      body: 'b',
      action_url: null,
      data: {},
    };
    // No transaction around it: the statement is all or nothing on its own.
    const store = storeBatch(api.runtime.orm.em.fork(), api.runtime.boss!, {
      deliveries: [
        {
          id: deliveryId,
          event_id: id!,
          tenant_id: event.tenant_id,
          channel: delivery.channel,
          destination: delivery.destination,
          provider: null,
          status: 'delivered',
          reason: null,
          last_error: null,
          attempts: 1,
        },
      ],
      items: [item],
      eventIds: [id!],
      jobs: [],
    });
    // Refused by whichever check the statement reaches first: the unique key of the delivery already
    // stored, or the assertion that every event of the batch was still queued.
    await expect(store).rejects.toThrow(
      /deliveries_event_id_channel_destination_key|an event of the batch has started elsewhere/,
    );
    expect(await sql(api, `SELECT 1 FROM deliveries WHERE event_id = $1`, [id])).toHaveLength(1);
    expect(await sql(api, `SELECT 1 FROM inbox_items WHERE event_id = $1`, [id])).toHaveLength(1);
    expect(await streamLogOf(event.contact_id)).toHaveLength(1);
  });

  // Two more inbox items for the contact, stored in two transactions as the batch path (storeBatch)
  // or the per-event inbox channel (storeInboxItem) stores them.
  type Store = (
    tx: EntityManager,
    item: Parameters<typeof storeInboxItem>[1] & { event_id: string; delivery_id: string },
  ) => Promise<unknown>;
  const viaBatch: Store = (tx, item) =>
    storeBatch(tx, api.runtime.boss!, {
      deliveries: [
        {
          id: item.delivery_id,
          event_id: item.event_id,
          tenant_id: item.tenant_id,
          channel: 'inbox',
          destination: `lock-${item.title}`,
          provider: null,
          status: 'delivered',
          reason: null,
          last_error: null,
          attempts: 1,
        },
      ],
      items: [item],
      eventIds: [],
      jobs: [],
    });
  const viaChannel: Store = (tx, item) => storeInboxItem(tx, item);
  it.each([
    ['the batch path', 'lock_1', viaBatch],
    ['the per-event path', 'lock_2', viaChannel],
  ])(
    "takes a contact's stream lock before drawing its stream ids and holds it until commit (%s)",
    async (_path, recipient, store) => {
      const [eventId] = await trigger({ recipients: [recipient], variables: { name: 'x' } });
      await waitForFinal(api, [eventId!]);
      const event = (await sqlOne<{ tenant_id: string; contact_id: string }>(
        api,
        `SELECT tenant_id::text, contact_id::text FROM events WHERE id = $1`,
        [eventId],
      ))!;
      const itemOf = (title: string) => ({
        id: newId(),
        tenant_id: event.tenant_id,
        contact_id: event.contact_id,
        event_id: eventId!,
        delivery_id: newId(),
        type_key: 'plain',
        title,
        body: 'b',
        action_url: null,
        data: {},
      });
      const aMayCommit = signal();
      const aHasStored = signal();
      let released = false;
      const a = api.runtime.orm.em.fork().transactional(async (tx) => {
        await store(tx, itemOf('a'));
        aHasStored.raise();
        await aMayCommit.raised;
      });
      await aHasStored.raised;
      let bStoredWhileAOpen = false;
      const b = api.runtime.orm.em.fork().transactional(async (tx) => {
        await store(tx, itemOf('b'));
        bStoredWhileAOpen = !released;
      });
      await untilLockWait(api); // b waits for a's lock: a b that does not wait ends this test by the timeout
      released = true;
      aMayCommit.raise();
      await Promise.all([a, b]);
      // B waited for A's commit before drawing its id, so the contact's ids became visible in order.
      expect(bStoredWhileAOpen).toBe(false);
      const stream = await streamLogOf(event.contact_id);
      expect(stream.map((s) => s.payload.title)).toEqual([`Hi ${recipient}`, 'a', 'b']);
    },
  );

  it('skips the inbox for a contact who opted out, only while the type opt-out policy is on', async () => {
    await insertNotificationType(api, acme.tenantId, { key: 'optable', optOut: true });
    await insertInboxTemplate(api, acme.tenantId, { type: 'optable', title: 't', content: 'c' });
    const [warm] = await trigger({ type: 'optable', recipients: ['opt_1', 'opt_2'] });
    await waitForFinal(api, [warm!]);
    const contact = await sqlOne<{ id: string }>(
      api,
      `SELECT id FROM contacts WHERE tenant_id = $1 AND external_id = 'opt_1'`,
      [acme.tenantId],
    );
    await execute(
      api.runtime.orm.em.fork(),
      `INSERT INTO contact_preferences (contact_id, tenant_id, type_key, channel, enabled) VALUES ($1, $2, 'optable', 'inbox', false)`,
      [contact!.id, acme.tenantId],
    );
    const [optedOut, notOptedOut] = await trigger({ type: 'optable', recipients: ['opt_1', 'opt_2'] });
    await waitForFinal(api, [optedOut!, notOptedOut!]);
    expect(await deliveriesOf(optedOut!)).toEqual([
      { channel: 'inbox', status: 'skipped', reason: 'opted_out', attempts: 0, last_error: null },
    ]);
    expect((await deliveriesOf(notOptedOut!))[0]!.status).toBe('delivered');
    // Policy off: the stored choice is dormant.
    await execute(
      api.runtime.orm.em.fork(),
      `UPDATE notification_types SET opt_out = false WHERE tenant_id = $1 AND key = 'optable'`,
      [acme.tenantId],
    );
    const [dormant] = await trigger({ type: 'optable', recipients: ['opt_1'] });
    await waitForFinal(api, [dormant!]);
    expect((await deliveriesOf(dormant!))[0]!.status).toBe('delivered');
  });

  it('records channel_disabled for a requested channel the type has off', async () => {
    await insertNotificationType(api, acme.tenantId, { key: 'no_inbox', channels: { inbox: false, email: true } });
    const [id] = await trigger({ type: 'no_inbox', recipients: ['cd_1'], channels: ['inbox'] });
    const [event] = await waitForFinal(api, [id!]);
    expect(event!.status).toBe('skipped');
    expect(await deliveriesOf(id!)).toEqual([
      { channel: 'inbox', status: 'skipped', reason: 'channel_disabled', attempts: 0, last_error: null },
    ]);
  });

  it('skips with no_template when no inbox template resolves', async () => {
    await insertNotificationType(api, acme.tenantId, { key: 'untemplated' });
    const [id] = await trigger({ type: 'untemplated', recipients: ['nt_1'] });
    const [event] = await waitForFinal(api, [id!]);
    expect(event!.status).toBe('skipped');
    expect(await deliveriesOf(id!)).toEqual([
      { channel: 'inbox', status: 'skipped', reason: 'no_template', attempts: 1, last_error: null },
    ]);
  });

  it('fails a delivery whose template has an unfilled slot, naming the slot, without retrying', async () => {
    await insertNotificationType(api, acme.tenantId, { key: 'slotted' });
    await insertInboxTemplate(api, acme.tenantId, { type: 'slotted', title: 'Order', content: 'Ref {{ order_ref }}' });
    const [id] = await trigger({ type: 'slotted', recipients: ['slot_1'] }); // no "order_ref" variable
    const [event] = await waitForFinal(api, [id!]);
    expect(event!.status).toBe('failed');
    const [delivery] = await deliveriesOf(id!);
    expect(delivery).toMatchObject({ status: 'failed', attempts: 1 });
    expect(delivery!.last_error).toContain('"order_ref"');
  });

  it('uses the template of the contact language, falling back to the tenant default', async () => {
    await insertNotificationType(api, acme.tenantId, { key: 'localised' });
    await insertInboxTemplate(api, acme.tenantId, { type: 'localised', title: 'Hello', content: 'en' });
    await insertInboxTemplate(api, acme.tenantId, { type: 'localised', title: 'Hallo', content: 'de', language: 'de' });
    const ids = await trigger({
      type: 'localised',
      recipients: [
        { external_id: 'lang_de', language: 'de-AT' },
        { external_id: 'lang_fr', language: 'fr' },
      ],
    });
    await waitForFinal(api, ids);
    const titles = await sql<{ title: string }>(
      api,
      `SELECT title FROM inbox_items WHERE event_id = ANY($1::uuid[]) ORDER BY title`,
      [ids],
    );
    expect(titles.map((t) => t.title)).toEqual(['Hallo', 'Hello']);
  });

  it('retries a failed attempt with backoff, counting attempts and keeping the last error', async () => {
    const em = api.runtime.orm.em.fork();
    await execute(
      em,
      `CREATE OR REPLACE FUNCTION test_inbox_refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'inbox store unavailable'; END $$ LANGUAGE plpgsql`,
    );
    await execute(
      em,
      `CREATE TRIGGER test_inbox_refuse BEFORE INSERT ON inbox_items FOR EACH ROW WHEN (NEW.title = 'Hi retry_1') EXECUTE FUNCTION test_inbox_refuse()`,
    );
    const [id] = await trigger({ recipients: ['retry_1'], variables: { name: 'x' } });
    const first = await eventually(
      async () => {
        const rows = await deliveriesOf(id!);
        return !!rows[0]?.attempts && rows;
      },
      { message: 'no attempt recorded' },
    );
    expect(first[0]).toMatchObject({ status: 'pending', attempts: 1 });
    expect(first[0]!.last_error).toContain('inbox store unavailable');
    expect((await sqlOne<{ status: string }>(api, `SELECT status FROM events WHERE id = $1`, [id]))!.status).toBe(
      'processing',
    );
    await execute(em, `DROP TRIGGER test_inbox_refuse ON inbox_items`);
    const [event] = await waitForFinal(api, [id!]);
    expect(event!.status).toBe('delivered');
    const [delivery] = await deliveriesOf(id!);
    expect(delivery!.status).toBe('delivered');
    expect(delivery!.attempts).toBeGreaterThanOrEqual(2);
  });

  it('a shared job with a failing event is retried for it alone: its other events are delivered once', async () => {
    const em = api.runtime.orm.em.fork();
    await execute(
      em,
      `CREATE OR REPLACE FUNCTION test_inbox_refuse() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'inbox store unavailable'; END $$ LANGUAGE plpgsql`,
    );
    await execute(
      em,
      `CREATE TRIGGER test_inbox_refuse4 BEFORE INSERT ON inbox_items FOR EACH ROW WHEN (NEW.title = 'Hi mixed_fail') EXECUTE FUNCTION test_inbox_refuse()`,
    );
    const ids = await trigger({ recipients: ['mixed_ok1', 'mixed_fail', 'mixed_ok2'], variables: { name: 'x' } });
    const [shared] = await deliveryJobsOf(api, ids);
    expect(shared!.event_ids.sort()).toEqual([...ids].sort());
    try {
      const jobOf = () =>
        sqlOne<{ state: string; retry_count: number }>(api, `SELECT state, retry_count FROM pgboss.job WHERE id = $1`, [
          shared!.id,
        ]);
      // The job is retried (its retry count goes up), with the failing event's error as its output.
      await eventually(async () => ((await jobOf())?.retry_count ?? 0) >= 2, {
        message: 'the shared job was not retried twice',
      });
      const failedAttempts = await sql<{ output: { message: string } }>(
        api,
        `SELECT output FROM pgboss.job WHERE id = $1 AND output IS NOT NULL`,
        [shared!.id],
      );
      expect(JSON.stringify(failedAttempts)).toContain(`${ids[1]}: inbox: inbox store unavailable`);
      // The others were delivered on the first attempt and left alone by the retries.
      for (const id of [ids[0]!, ids[2]!])
        expect(await deliveriesOf(id)).toMatchObject([{ channel: 'inbox', status: 'delivered', attempts: 1 }]);
      expect((await deliveriesOf(ids[1]!))[0]).toMatchObject({ status: 'pending' });
      expect((await deliveriesOf(ids[1]!))[0]!.attempts).toBeGreaterThanOrEqual(2);
    } finally {
      await execute(em, `DROP TRIGGER test_inbox_refuse4 ON inbox_items`);
    }
    // Once the store works again, the retried job delivers it; every event has one item.
    expect((await waitForFinal(api, ids)).map((e) => e.status)).toEqual(['delivered', 'delivered', 'delivered']);
    expect(await sql(api, `SELECT event_id FROM inbox_items WHERE event_id = ANY($1::uuid[])`, [ids])).toHaveLength(3);
  });

  it("inbox-only events of a trigger share jobs of up to 25; events with a remote channel, smaller ones; a workflow's, none", async () => {
    await insertNotificationType(api, acme.tenantId, { key: 'mailed', channels: { inbox: true, email: true } });
    const many = await trigger({
      recipients: Array.from({ length: 30 }, (_, i) => `share_${i}`),
      variables: { name: 'x' },
    });
    const shared = await deliveryJobsOf(api, many);
    const sorted = [...many].sort();
    expect(shared.map((j) => j.event_ids)).toEqual([sorted.slice(0, 25), sorted.slice(25)]);
    for (const j of shared) expect(j.id).toBe(j.event_ids[0]);
    const mailed = await trigger({
      type: 'mailed',
      recipients: Array.from({ length: REMOTE_EVENTS_PER_DELIVERY_JOB + 1 }, (_, i) => `own_${i}`),
    });
    const mailedSorted = [...mailed].sort();
    expect((await deliveryJobsOf(api, mailed)).map((j) => j.event_ids)).toEqual([
      mailedSorted.slice(0, REMOTE_EVENTS_PER_DELIVERY_JOB),
      mailedSorted.slice(REMOTE_EVENTS_PER_DELIVERY_JOB),
    ]);
    // Asked for the inbox only, the same type's events share one.
    const inboxOnly = await trigger({
      type: 'mailed',
      channels: ['inbox'],
      recipients: ['inbox_only_1', 'inbox_only_2'],
    });
    expect((await deliveryJobsOf(api, inboxOnly)).map((j) => j.event_ids)).toEqual([[...inboxOnly].sort()]);
    // A workflow's events run one by one (the per-event run): a job each, so a batch of them runs side by side.
    await insertNotificationType(api, acme.tenantId, { key: 'flowed', channels: { inbox: true } });
    await execute(
      api.runtime.orm.em.fork(),
      `UPDATE notification_types SET workflow = '{"steps": [{"kind": "channel", "channel": "inbox"}]}'::jsonb WHERE tenant_id = $1 AND key = 'flowed'`,
      [acme.tenantId],
    );
    const flowed = await trigger({ type: 'flowed', recipients: ['flow_1', 'flow_2', 'flow_3'] });
    expect((await deliveryJobsOf(api, flowed)).map((j) => j.event_ids)).toEqual([...flowed].sort().map((id) => [id]));
    await waitForFinal(api, [...many, ...mailed, ...inboxOnly, ...flowed]);
  });

  it('a delivery already final is never delivered again, and a re-run never duplicates the inbox item', async () => {
    const [id] = await trigger({ recipients: ['idem_1'], variables: { name: 'x' } });
    await waitForFinal(api, [id!]);
    await deliverEvent(api.runtime, id!, { finalAttempt: false });
    // Even when the delivery is forced back to pending (a crash between store and status), the item stays single.
    await execute(api.runtime.orm.em.fork(), `UPDATE deliveries SET status = 'pending' WHERE event_id = $1`, [id]);
    await execute(api.runtime.orm.em.fork(), `UPDATE events SET status = 'processing' WHERE id = $1`, [id]);
    await deliverEvent(api.runtime, id!, { finalAttempt: false });
    expect(await sql(api, `SELECT 1 FROM inbox_items WHERE event_id = $1`, [id])).toHaveLength(1);
    expect((await sqlOne<{ status: string }>(api, `SELECT status FROM events WHERE id = $1`, [id]))!.status).toBe(
      'delivered',
    );
  });

  it('the dead-letter worker fails what is still pending when retries are exhausted', async () => {
    const em = api.runtime.orm.em.fork();
    await execute(
      em,
      `CREATE TRIGGER test_inbox_refuse2 BEFORE INSERT ON inbox_items FOR EACH ROW WHEN (NEW.title LIKE 'Hi dead_%') EXECUTE FUNCTION test_inbox_refuse()`,
    );
    const ids = await trigger({ recipients: ['dead_1', 'dead_2'], variables: { name: 'x' } });
    await eventually(async () => (await Promise.all(ids.map(deliveriesOf))).every((d) => d[0]?.attempts === 1), {
      message: 'no attempt recorded',
    });
    // Dead jobs of both shapes: several events, and one (as enqueued before jobs carried several).
    await api.runtime.boss!.send(DELIVER_EVENT_DEAD_QUEUE, { event_ids: [ids[0]!] });
    await api.runtime.boss!.send(DELIVER_EVENT_DEAD_QUEUE, { event_id: ids[1]! });
    expect((await waitForFinal(api, ids)).map((e) => e.status)).toEqual(['failed', 'failed']);
    for (const id of ids) {
      const [delivery] = await deliveriesOf(id);
      expect(delivery!.status).toBe('failed');
      expect(delivery!.last_error).toContain('inbox store unavailable');
    }
    await execute(em, `DROP TRIGGER test_inbox_refuse2 ON inbox_items`);
  });

  it('the last attempt records a final failure instead of retrying', async () => {
    const em = api.runtime.orm.em.fork();
    await execute(
      em,
      `CREATE TRIGGER test_inbox_refuse3 BEFORE INSERT ON inbox_items FOR EACH ROW WHEN (NEW.title LIKE 'Hi last_%') EXECUTE FUNCTION test_inbox_refuse()`,
    );
    await worker!.runtime.boss!.offWork('deliver-event');
    const [id] = await trigger({ recipients: ['last_1'], variables: { name: 'x' } });
    await deliverEvent(api.runtime, id!, { finalAttempt: true });
    const [delivery] = await deliveriesOf(id!);
    expect(delivery).toMatchObject({ status: 'failed', attempts: 1 });
    expect((await sqlOne<{ status: string }>(api, `SELECT status FROM events WHERE id = $1`, [id]))!.status).toBe(
      'failed',
    );
    await execute(em, `DROP TRIGGER test_inbox_refuse3 ON inbox_items`);
  });
});

describe('channel decision (planner)', () => {
  const base: PlanInput = {
    channelDefaults: { inbox: true, email: true, push: true, web_push: true },
    requestedChannels: null,
    optOutPolicy: true,
    preferences: {},
    tenantArchived: false,
    contactEmail: 'a@example.org',
    contactPhone: null,
    chatDestinations: [],
    contactExists: true,
    subscriptions: [
      { id: 's1', provider: 'apns' },
      { id: 's2', provider: 'fcm' },
      { id: 's3', provider: 'webpush' },
    ],
    registered: new Set<Channel>(['inbox', 'email', 'push', 'web_push']),
  };
  const summary = (input: Partial<PlanInput>) =>
    planDeliveries({ ...base, ...input }).map((d) => `${d.channel}:${d.destination}:${d.status}:${d.reason ?? ''}`);

  it('one delivery per channel and destination', () => {
    expect(summary({})).toEqual([
      'inbox::pending:',
      'email:a@example.org:pending:',
      'push:s1:pending:',
      'push:s2:pending:',
      'web_push:s3:pending:',
    ]);
  });

  it('an opt-out skips exactly that channel, only while the policy is on', () => {
    expect(summary({ preferences: { email: false } })).toEqual([
      'inbox::pending:',
      'email::skipped:opted_out',
      'push:s1:pending:',
      'push:s2:pending:',
      'web_push:s3:pending:',
    ]);
    expect(summary({ preferences: { email: false }, optOutPolicy: false })).toContain('email:a@example.org:pending:');
  });

  it('no destination: no email address, no subscriptions', () => {
    expect(summary({ contactEmail: null, subscriptions: [] })).toEqual([
      'inbox::pending:',
      'email::skipped:no_destination',
      'push::skipped:no_destination',
      'web_push::skipped:no_destination',
    ]);
  });

  it('requested channels narrow the defaults; a requested channel off by default is channel_disabled', () => {
    expect(summary({ channelDefaults: { inbox: true, email: false }, requestedChannels: ['email', 'inbox'] })).toEqual([
      'inbox::pending:',
      'email::skipped:channel_disabled',
    ]);
  });

  it('leaves out channels without a registered sender', () => {
    expect(summary({ registered: new Set<Channel>(['inbox']) })).toEqual(['inbox::pending:']);
  });

  it('skips every attempted channel of an archived tenant', () => {
    expect(summary({ tenantArchived: true, channelDefaults: { inbox: true } })).toEqual([
      'inbox::skipped:tenant_archived',
    ]);
  });
});

describe('a killed worker process', () => {
  it('loses no event and duplicates no inbox item', { timeout: 90_000 }, async () => {
    const app = await startTestApp({ role: 'api' });
    const children: ChildProcess[] = [];
    const home = mkdtempSync(join(tmpdir(), 'herald-worker-'));
    const mayRelease = signal();
    const TRIGGERS = 8; // 800 events in 32 jobs: more than one fetched batch
    try {
      const t = await createTenantFixture(app, 'Crash');
      await insertNotificationType(app, t.tenantId, { key: 'plain' });
      await insertInboxTemplate(app, t.tenantId, { type: 'plain', title: 'T {{ contact.external_id }}', content: 'B' });
      const ids: string[] = [];
      for (let batch = 0; batch < TRIGGERS; batch++) {
        const res = await app.request('POST', '/v1/notifications', {
          token: t.serviceKey,
          body: { type: 'plain', recipients: Array.from({ length: 100 }, (_, i) => `k${batch}_${i}`) },
        });
        expect(res.status).toBe(202);
        ids.push(...res.body.events.map((e: { event_id: string }) => e.event_id));
      }
      // The kill must land mid-batch. A fetched batch (up to 25 jobs of 25 events) is stored by one
      // statement, which a killed client does not stop: so the last trigger's events are held (FOR
      // UPDATE) by a transaction of the test. Jobs are fetched in the order they were created, so they
      // are in the second batch (jobs 26 to 32), whose statement waits until that transaction is gone,
      // while the first batch's goes through.
      const heldIds = ids.slice(-100);
      const held = signal();
      let holderPid = 0;
      const holding = app.runtime.orm.em.fork().transactional(async (tx) => {
        holderPid = (await queryOne<{ pid: number }>(tx, `SELECT pg_backend_pid() AS pid`))!.pid;
        await execute(tx, `SELECT 1 FROM events WHERE id = ANY($1::uuid[]) FOR UPDATE`, [heldIds]);
        held.raise();
        await mayRelease.raised;
      });
      await held.raised;
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
      const count = async () =>
        (await sqlOne<{ n: number }>(app, `SELECT count(*)::int AS n FROM inbox_items WHERE tenant_id = $1`, [
          t.tenantId,
        ]))!.n;
      const waiting = async () =>
        (await sqlOne<{ n: number }>(
          app,
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`,
          [holderPid],
        ))!.n;
      await eventually(async () => (await count()) >= 20 && (await waiting()) > 0, {
        timeoutMs: 30_000,
        intervalMs: 20,
        message: 'the first worker delivered nothing, or nothing of it waits',
      });
      first.kill('SIGKILL');
      await once(first, 'exit');
      // Its waiting statements end as PostgreSQL ends a dead client's work once it notices (here: at once).
      await execute(
        app.runtime.orm.em.fork(),
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`,
        [holderPid],
      );
      mayRelease.raise();
      await holding;
      const active = await sqlOne<{ n: number }>(
        app,
        `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'deliver-event' AND state = 'active'`,
      );
      expect(active!.n).toBeGreaterThan(0); // it died holding jobs
      const deadWorkersJobs = await activeJobs(app, 'deliver-event');
      expect(await count()).toBeLessThan(TRIGGERS * 100);
      children.push(startWorkerProcess(env));
      // The dead worker's jobs stop heartbeating; the new worker's lost-job check hands them back.
      await untilHandedBack(app, 'deliver-event', deadWorkersJobs);
      const final = await waitForFinal(app, ids, 45_000);
      expect(final.filter((e) => e.status !== 'delivered')).toEqual([]);
      const perDelivery = await sql<{ n: number }>(
        app,
        `SELECT count(i.id)::int AS n FROM deliveries d LEFT JOIN inbox_items i ON i.delivery_id = d.id WHERE d.event_id = ANY($1::uuid[]) GROUP BY d.id`,
        [ids],
      );
      expect(perDelivery).toHaveLength(TRIGGERS * 100);
      expect(perDelivery.every((r) => r.n === 1)).toBe(true);
      expect(await count()).toBe(TRIGGERS * 100);
    } finally {
      mayRelease.raise();
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await app.close();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

function startWorkerProcess(env: Record<string, string | undefined>): ChildProcess {
  const child = spawn(HERALD_BIN, ['start', '--role', 'worker'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', () => undefined);
  return child;
}

describe('push and email channels (their senders are injected until the transport branches merge)', () => {
  it('deletes a dead push destination and fails the delivery without retry; recording a sent one records its use', async () => {
    const [eventId] = await trigger({ recipients: ['push_1'], variables: { name: 'x' } });
    const contact = (await sqlOne<ContactRow>(
      api,
      `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE tenant_id = $1 AND external_id = 'push_1'`,
      [acme.tenantId],
    ))!;
    const em = api.runtime.orm.em.fork();
    const subscription = async (token: string) => {
      const id = newId();
      await execute(
        em,
        `INSERT INTO push_subscriptions (id, tenant_id, contact_id, provider, token, destination_hash) VALUES ($1, $2, $3, 'apns', $4, $4)`,
        [id, acme.tenantId, contact.id, token],
      );
      return id;
    };
    const brand = (await findBrand(em, acme.tenantId, null))!;
    const event = {
      id: newId(),
      tenant_id: acme.tenantId,
      type_key: 'plain',
      brand_key: null,
      external_id: 'push_1',
      variables: { name: 'x' },
      brand,
      default_brand_key: brand.key,
      default_language: 'en',
    };
    const messages: unknown[] = [];
    const run = (result: PushOutcome, destination: string) =>
      em.transactional((tx) =>
        pushChannel(async (_rt, _em, _tenant, dest, message) => {
          messages.push({ token: 'token' in dest ? dest.token : null, message });
          return result;
        }).deliver({
          runtime: api.runtime,
          em: tx,
          delivery: { id: newId(), channel: 'push', destination, provider: 'apns', attempts: 0 },
          event,
          contact,
          renderVariables: { name: 'Secret Name' },
          templates: newTemplateCache(),
        }),
      );
    const dead = await subscription('token-dead');
    expect(await run({ status: 'dead', error: '410 Unregistered' }, dead)).toEqual({
      status: 'failed',
      error: 'destination removed: 410 Unregistered',
      retryable: false,
    });
    expect(await sql(api, `SELECT 1 FROM push_subscriptions WHERE id = $1`, [dead])).toHaveLength(0);
    expect(messages[0]).toMatchObject({
      token: 'token-dead',
      message: { title: 'Hi push_1', body: 'Hello from Secret Name', action_url: 'https://app.test/push_1' },
    });
    const live = await subscription('token-live');
    expect(await run({ status: 'sent', providerMessageId: 'apns-1' }, live)).toEqual({
      status: 'sent',
      providerMessageId: 'apns-1',
    });
    // The channel leaves the subscription's use to the recording of the outcome, one or many at a time.
    const lastUsed = async (id: string) =>
      (await sqlOne<{ last_used_at: Date | null }>(api, `SELECT last_used_at FROM push_subscriptions WHERE id = $1`, [
        id,
      ]))!.last_used_at;
    expect(await lastUsed(live)).toBeNull();
    const pushDelivery = async (destination: string) => {
      const id = newId();
      await execute(
        em,
        `INSERT INTO deliveries (id, event_id, tenant_id, channel, destination, provider, status) VALUES ($1, $2, $3, 'push', $4, 'apns', 'pending')`,
        [id, eventId, acme.tenantId, destination],
      );
      return { id, channel: 'push' as const };
    };
    const [failed, other] = [await subscription('token-failed'), await subscription('token-other')];
    await recordOutcome(em, await pushDelivery(failed), { status: 'failed', error: 'boom', retryable: false }, false);
    await recordOutcome(em, await pushDelivery(live), { status: 'sent' }, false);
    expect(await lastUsed(live)).not.toBeNull();
    expect(await lastUsed(failed)).toBeNull();
    await recordOutcomes(em, [
      { delivery: await pushDelivery(other), outcome: { status: 'sent' }, finalAttempt: false },
    ]);
    expect(await lastUsed(other)).not.toBeNull();
    // To the minute: a use within a minute of the last one writes nothing, a later one moves it on.
    const usedAgo = async (id: string, seconds: number) => {
      await execute(
        em,
        `UPDATE push_subscriptions SET last_used_at = now() - make_interval(secs => $2) WHERE id = $1`,
        [id, seconds],
      );
      return new Date((await lastUsed(id))!).getTime();
    };
    const [recentlyUsed, longAgoUsed] = [await subscription('token-recent'), await subscription('token-long-ago')];
    const recent = await usedAgo(recentlyUsed, 30);
    const stale = await usedAgo(longAgoUsed, 120);
    await recordOutcomes(em, [
      { delivery: await pushDelivery(recentlyUsed), outcome: { status: 'sent' }, finalAttempt: false },
      { delivery: await pushDelivery(longAgoUsed), outcome: { status: 'sent' }, finalAttempt: false },
    ]);
    expect(new Date((await lastUsed(recentlyUsed))!).getTime()).toBe(recent);
    expect(new Date((await lastUsed(longAgoUsed))!).getTime()).toBeGreaterThan(stale + 60_000);
    // A subscription removed since planning: nothing to send to.
    expect(await run({ status: 'sent' }, newId())).toEqual({ status: 'skipped', reason: 'no_destination' });
  });

  it('records the use of many subscriptions packed in pages, many of them without new index entries (HOT updates)', async () => {
    const [eventId] = await trigger({ recipients: ['push_hot'], variables: { name: 'x' } });
    const { contact_id: contactId } = (await sqlOne<{ contact_id: string }>(
      api,
      `SELECT contact_id::text FROM events WHERE id = $1`,
      [eventId],
    ))!;
    const em = api.runtime.orm.em.fork();
    const outcomes: Array<{
      delivery: { id: string; channel: 'push' };
      outcome: { status: 'sent' };
      finalAttempt: boolean;
    }> = [];
    for (let i = 0; i < 200; i++) {
      const [subscriptionId, deliveryId] = [newId(), newId()];
      const token = `token-hot-${String(i).padStart(3, '0')}`;
      await execute(
        em,
        `INSERT INTO push_subscriptions (id, tenant_id, contact_id, provider, token, destination_hash) VALUES ($1, $2, $3, 'apns', $4, $4)`,
        [subscriptionId, acme.tenantId, contactId, token],
      );
      await execute(
        em,
        `INSERT INTO deliveries (id, event_id, tenant_id, channel, destination, provider, status) VALUES ($1, $2, $3, 'push', $4, 'apns', 'pending')`,
        [deliveryId, eventId, acme.tenantId, subscriptionId],
      );
      outcomes.push({
        delivery: { id: deliveryId, channel: 'push' },
        outcome: { status: 'sent' as const },
        finalAttempt: false,
      });
    }
    // This connection's counts not yet reported, read before and after, inside one transaction.
    const counts = await em.fork().transactional(async (tx) => {
      const read = async () =>
        (await queryOne<{ updated: string; hot: string }>(
          tx,
          `SELECT pg_stat_get_xact_tuples_updated('push_subscriptions'::regclass) AS updated, pg_stat_get_xact_tuples_hot_updated('push_subscriptions'::regclass) AS hot`,
        ))!;
      const before = await read();
      await recordOutcomes(tx, outcomes);
      const after = await read();
      return { updated: Number(after.updated) - Number(before.updated), hot: Number(after.hot) - Number(before.hot) };
    });
    expect(counts.updated).toBe(200);
    // The pages keep room for updates (fillfactor): with packed pages, next to none would be HOT.
    expect(counts.hot).toBeGreaterThan(60);
  });

  it("renders an inbox template's strings once per distinct values they read within a run, telling a missing variable from a null one", async () => {
    const em = api.runtime.orm.em.fork();
    await insertNotificationType(api, acme.tenantId, { key: 'memo' });
    await insertInboxTemplate(api, acme.tenantId, {
      type: 'memo',
      title: 'Order {{ order }}',
      content: 'For {{ contact.name | default: "you" }}',
    });
    await insertNotificationType(api, acme.tenantId, { key: 'memo_lookup' });
    await insertInboxTemplate(api, acme.tenantId, { type: 'memo_lookup', title: '{{ [field] }}', content: 'x' });
    const brand = (await findBrand(em, acme.tenantId, null))!;
    const contactOf = (name: string | null) => ({
      id: newId(),
      tenant_id: acme.tenantId,
      external_id: `memo_${name}`,
      email: null,
      phone: null,
      name,
      language: null,
      properties: {},
      timezone: null,
      quiet_hours: null,
      created_at: new Date(),
      updated_at: new Date(),
    });
    const [ann, bob] = [contactOf('Ann'), contactOf('Bob')];
    const event = (type: string) => ({
      id: newId(),
      tenant_id: acme.tenantId,
      type_key: type,
      brand_key: null,
      external_id: 'x',
      variables: {},
      brand,
      default_brand_key: brand.key,
      default_language: 'en',
    });
    const templates = newTemplateCache();
    const render = (contact: ContactRow, variables: Record<string, unknown>, type = 'memo') =>
      renderInboxDelivery(em, event(type), contact, variables, templates);

    const first = await render(ann, { order: 1 });
    expect(first).toEqual({ title: 'Order 1', body: 'For Ann', action_url: null });
    // The same values of what it reads: the same text (rendered once; what it does not read does not count).
    expect(await render(ann, { order: 1, unread: 'other' })).toEqual(first);
    expect(await render(bob, { order: 1 })).toEqual({ title: 'Order 1', body: 'For Bob', action_url: null });
    expect((await render(ann, { order: 2 }))!.title).toBe('Order 2');
    expect((await render(ann, { order: null }))!.title).toBe('Order ');
    await expect(render(ann, {})).rejects.toThrow(UnfilledSlotError);
    // A name every object inherits is no variable either, whatever was rendered before.
    await insertNotificationType(api, acme.tenantId, { key: 'memo_inherited' });
    await insertInboxTemplate(api, acme.tenantId, {
      type: 'memo_inherited',
      title: 'Made by {{ constructor }}',
      content: 'x',
    });
    expect((await render(ann, { constructor: null }, 'memo_inherited'))!.title).toBe('Made by ');
    await expect(render(ann, {}, 'memo_inherited')).rejects.toThrow(UnfilledSlotError);
    // A bracket lookup reads a variable named by a value: rendered every time.
    expect((await render(ann, { field: 'a', a: 'one' }, 'memo_lookup'))!.title).toBe('one');
    expect((await render(ann, { field: 'a', a: 'two' }, 'memo_lookup'))!.title).toBe('two');
  });

  it('renders an email once per distinct values its subject and content read within a run, layout and text part included', async () => {
    const em = api.runtime.orm.em.fork();
    const emailTemplate = async (type: string, subject: string, content: string) => {
      await insertNotificationType(api, acme.tenantId, { key: type });
      await insertEmailTemplate(api, acme.tenantId, { type, subject, content });
    };
    await emailTemplate('memo_mail', 'Order {{ order }}', '<p>For {{ contact.name | default: "you" }}</p>');
    await emailTemplate('memo_mail_lookup', 'x', '<p>{{ [field] }}</p>');
    await emailTemplate('memo_mail_static', 'Static', '<p>{% if true %}{{ "same" }}{% endif %}</p>');
    const brand = (await findBrand(em, acme.tenantId, null))!;
    const contactOf = (name: string | null) => ({
      id: newId(),
      tenant_id: acme.tenantId,
      external_id: `mail_${name}`,
      email: null,
      phone: null,
      name,
      language: null,
      properties: {},
      timezone: null,
      quiet_hours: null,
      created_at: new Date(),
      updated_at: new Date(),
    });
    const [ann, bob] = [contactOf('Ann'), contactOf('Bob')];
    const event = (type: string) => ({
      id: newId(),
      tenant_id: acme.tenantId,
      type_key: type,
      brand_key: null,
      external_id: 'x',
      variables: {},
      brand,
      default_brand_key: brand.key,
      default_language: 'en',
    });
    const templates = newTemplateCache();
    const render = async (contact: ContactRow, variables: Record<string, unknown>, type = 'memo_mail') =>
      (await renderEmailDelivery(em, event(type), contact, variables, templates))!.email;

    const first = await render(ann, { order: 1, unsubscribe_url: 'https://u.test/ann' });
    expect(first).toMatchObject({ subject: 'Order 1', text: expect.stringContaining('For Ann') });
    expect(first.html).toContain('<p>For Ann</p>');
    // The same values of what it reads: the same email, rendered once (what it does not read, such as a delivery's own link, does not count).
    expect(await render(ann, { order: 1, unsubscribe_url: 'https://u.test/ann-2' })).toBe(first);
    const forBob = await render(bob, { order: 1 });
    expect(forBob).not.toBe(first);
    expect(forBob.html).toContain('<p>For Bob</p>');
    expect((await render(ann, { order: 2 })).subject).toBe('Order 2');
    expect((await render(ann, { order: null })).subject).toBe('Order');
    await expect(render(ann, {})).rejects.toThrow(UnfilledSlotError);
    // Another run renders afresh.
    const again = (await renderEmailDelivery(em, event('memo_mail'), ann, { order: 1 }, newTemplateCache()))!.email;
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
    // A bracket lookup, or tags whose reads cannot be told, render every time.
    expect((await render(ann, { field: 'a', a: 'one' }, 'memo_mail_lookup')).html).toContain('<p>one</p>');
    expect((await render(ann, { field: 'a', a: 'two' }, 'memo_mail_lookup')).html).toContain('<p>two</p>');
    const statics = [await render(ann, {}, 'memo_mail_static'), await render(ann, {}, 'memo_mail_static')];
    expect(statics[0]!.html).toContain('<p>same</p>');
    expect(statics[1]).not.toBe(statics[0]);
  });

  it('classifies sender results: retryable failures retry, others are final', () => {
    expect(pushOutcome({ status: 'failed', error: '503', retryable: true })).toEqual({
      status: 'failed',
      error: '503',
      retryable: true,
    });
    expect(pushOutcome({ status: 'skipped', reason: 'no_transport' })).toEqual({
      status: 'skipped',
      reason: 'no_transport',
    });
    expect(emailOutcome({ status: 'sent', messageId: '<m@x>' })).toEqual({
      status: 'sent',
      providerMessageId: '<m@x>',
    });
    expect(emailOutcome({ status: 'failed', error: '550 no such user', retryable: false })).toEqual({
      status: 'failed',
      error: '550 no such user',
      retryable: false,
    });
    expect(emailOutcome({ status: 'skipped', reason: 'credentials_unreadable' })).toEqual({
      status: 'skipped',
      reason: 'credentials_unreadable',
    });
  });
});

describe('safeActionUrl (rendered action URLs)', () => {
  it('keeps http(s) URLs and site paths, drops script and protocol-relative ones', async () => {
    const { safeActionUrl } = await import('../../../server/channels/render.ts');
    expect(safeActionUrl('https://app.test/orders/1')).toBe('https://app.test/orders/1');
    expect(safeActionUrl(' /orders/1 ')).toBe('/orders/1');
    expect(safeActionUrl('javascript:alert(1)')).toBeNull();
    expect(safeActionUrl('java\tscript:alert(1)')).toBeNull();
    expect(safeActionUrl('//evil.example/x')).toBeNull();
    expect(safeActionUrl('/\\evil.example/x')).toBeNull();
    expect(safeActionUrl('data:text/html,x')).toBeNull();
  });
});

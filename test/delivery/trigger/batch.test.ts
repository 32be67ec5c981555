// Triggers sharing statements: the trigger statement deciding each trigger of a batch on its own
// (against the real database), the batcher's queueing (with a controlled writer), and concurrent
// triggers through the API.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import pg from 'pg';
import { startTestApp, type TestApp } from '../../support/app.ts';
import {
  createTenantFixture,
  insertInboxTemplate,
  insertNotificationType,
  sql,
  sqlOne,
  untilLockWait,
  deliveryJobsOf,
  type TenantFixture,
} from '../../support/fixtures.ts';
import {
  TriggerBatcher,
  writeTriggers,
  type TriggerInput,
  type TriggerOutcome,
} from '../../../server/delivery/trigger/batch.ts';
import { contactUpsertInput } from '../../../server/resources/contact-upsert.ts';
import type { ContactFields } from '../../../server/schemas/contacts.ts';
import { newId } from '../../../server/base/ids.ts';
import { query } from '../../../server/base/db/sql.ts';
import { planDeliveries } from '../../../server/delivery/stages/plan.ts';
import { CHANNELS } from '../../../server/schemas/common.ts';
import { REMOTE_EVENTS_PER_DELIVERY_JOB } from '../../../server/delivery/queues.ts';
import type { Channel } from '../../../server/schemas/common.ts';

let app: TestApp;
let acme: TenantFixture;
let other: TenantFixture;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  other = await createTenantFixture(app, 'Other');
  for (const tenant of [acme, other]) {
    await insertNotificationType(app, tenant.tenantId, { key: 'plain' });
    await insertInboxTemplate(app, tenant.tenantId, { type: 'plain', title: 'Hi', content: 'Hello' });
  }
  await insertNotificationType(app, acme.tenantId, {
    key: 'needs_order',
    variables: [{ name: 'order_id', required: true }],
  });
});
afterAll(async () => {
  await app?.close();
});

function triggerInput(
  tenantId: string,
  type: string,
  recipients: Array<string | ContactFields>,
  variables: Record<string, unknown> = {},
): TriggerInput {
  const contacts = contactUpsertInput(recipients.map((r) => (typeof r === 'string' ? { external_id: r } : r)));
  return {
    tenant_id: tenantId,
    type,
    brand: null,
    channels: null,
    variables,
    names: Object.keys(variables),
    secret_keys: [],
    contacts,
    events: contacts.map((c) => ({ id: newId(), external_id: c.external_id, ciphertext: null })),
    send_at: null,
    cancellation_key: null,
  };
}

describe('the trigger statement, several triggers at once', () => {
  it('decides each trigger on its own and writes each recipient once per tenant', async () => {
    const triggers = [
      triggerInput(acme.tenantId, 'plain', ['mix_1', { external_id: 'mix_2', name: 'Bee' }]),
      triggerInput(acme.tenantId, 'no_such_type', ['mix_3']),
      triggerInput(acme.tenantId, 'plain', [
        'mix_2',
        { external_id: 'mix_1', name: 'One', properties: { plan: 'pro' } },
      ]),
      triggerInput(other.tenantId, 'plain', ['mix_1']),
      triggerInput(acme.tenantId, 'needs_order', ['mix_4']),
      triggerInput(newId(), 'plain', ['mix_5']),
    ];
    const outcomes = await writeTriggers(app.runtime.orm.em.fork(), app.runtime.boss!, triggers);

    expect(outcomes.map((o) => o.accepted)).toEqual([true, false, true, true, false, false]);
    // The outcome says what TriggerOutcome says, nothing of the statement's workings.
    expect(Object.keys(outcomes[0]!).sort()).toEqual([
      'accepted',
      'archived',
      'brand_found',
      'contact_ids',
      'missing',
      'tenant_found',
      'type_found',
    ]);
    expect(outcomes[1]).toMatchObject({ tenant_found: true, type_found: false, contact_ids: {} });
    expect(outcomes[4]).toMatchObject({ type_found: true, missing: ['order_id'], contact_ids: {} });
    expect(outcomes[5]).toMatchObject({ tenant_found: false });

    const acmeContacts = await sql<{ id: string; external_id: string; name: string | null; properties: object }>(
      app,
      `SELECT id, external_id, name, properties FROM contacts WHERE tenant_id = $1 AND external_id LIKE 'mix_%' ORDER BY external_id`,
      [acme.tenantId],
    );
    // Refused triggers created no contacts; the named-only recipients kept the fields another trigger gave.
    expect(acmeContacts.map((c) => [c.external_id, c.name, c.properties])).toEqual([
      ['mix_1', 'One', { plan: 'pro' }],
      ['mix_2', 'Bee', {}],
    ]);
    const idOf = Object.fromEntries(acmeContacts.map((c) => [c.external_id, c.id]));
    expect(outcomes[0]!.contact_ids).toEqual(idOf);
    expect(outcomes[2]!.contact_ids).toEqual(idOf);
    const otherContact = await sqlOne<{ id: string }>(
      app,
      `SELECT id FROM contacts WHERE tenant_id = $1 AND external_id = 'mix_1'`,
      [other.tenantId],
    );
    expect(outcomes[3]!.contact_ids).toEqual({ mix_1: otherContact!.id });
    expect(otherContact!.id).not.toBe(idOf.mix_1);

    // One event per recipient of the accepted triggers, in delivery jobs; nothing for the others.
    const eventIds = triggers.flatMap((t) => t.events.map((e) => e.id));
    const events = await sql<{ id: string; tenant_id: string; contact_id: string }>(
      app,
      `SELECT id, tenant_id, contact_id FROM events WHERE id = ANY($1::uuid[])`,
      [eventIds],
    );
    const accepted = [0, 2, 3].flatMap((n) => triggers[n]!.events.map((e) => e.id));
    expect(events.map((e) => e.id).sort()).toEqual([...accepted].sort());
    for (const e of events.filter((e) => triggers[3]!.events.some((t) => t.id === e.id)))
      expect(e).toMatchObject({ tenant_id: other.tenantId, contact_id: otherContact!.id });
    // The type reaches the inbox only: a tenant's events of the statement share one job (its first event's id).
    const jobs = await deliveryJobsOf(app, eventIds);
    const acmeEvents = [0, 2].flatMap((n) => triggers[n]!.events.map((e) => e.id)).sort();
    const otherEvents = triggers[3]!.events.map((e) => e.id);
    expect(jobs.map((j) => [j.id, j.event_ids]).sort()).toEqual(
      [
        [acmeEvents[0], acmeEvents],
        [otherEvents[0], otherEvents],
      ].sort(),
    );
    // All of them in one transaction.
    expect(
      await sql(app, `SELECT DISTINCT xmin::text FROM events WHERE id = ANY($1::uuid[])`, [eventIds]),
    ).toHaveLength(1);
  });

  it('puts events in shared jobs exactly when the delivery plan can attempt no channel but the inbox', async () => {
    // The statement decides sharing in SQL; the worker plans deliveries with plan.ts. For every on/off
    // of four channels in the type (the inbox and three remote ones: the statement treats every
    // channel but the inbox alike, and all seven would be 16,512 triggers), triggered as the type says (channels: null) and with every
    // subset of channels, the events of one more recipient than a job of remote events takes share one
    // job exactly when plan.ts, for a contact with every destination, plans no pending delivery but the
    // inbox.
    const subsets = (items: readonly Channel[]): Channel[][] =>
      items.reduce<Channel[][]>((all, c) => [...all, ...all.map((s) => [...s, c])], [[]]);
    const everyDestination = {
      optOutPolicy: false,
      preferences: {},
      tenantArchived: false,
      contactEmail: 'x@example.test',
      contactPhone: '+4915112345678',
      contactExists: true,
      chatDestinations: [],
      registered: new Set(CHANNELS),
    };
    const SAMPLED: Channel[] = ['inbox', 'email', 'push', 'sms'];
    const subscriptions = [
      { id: 'mobile', provider: 'apns' },
      { id: 'browser', provider: 'webpush' },
    ];
    const decided: Array<{ on: Channel[]; channels: Channel[] | null; shared: boolean; planned: boolean }> = [];
    for (const [i, on] of subsets(SAMPLED).entries()) {
      const channelDefaults = Object.fromEntries(CHANNELS.map((c) => [c, on.includes(c)]));
      const type = `sharing_${i}`;
      await insertNotificationType(app, acme.tenantId, { key: type, channels: channelDefaults });
      for (const channels of [null, ...subsets(SAMPLED)]) {
        const recipients = Array.from(
          { length: REMOTE_EVENTS_PER_DELIVERY_JOB + 1 },
          (_, r) => `sharing_${decided.length}_${r}`,
        );
        const trigger = { ...triggerInput(acme.tenantId, type, recipients), channels };
        const [outcome] = await writeTriggers(app.runtime.orm.em.fork(), app.runtime.boss!, [trigger]);
        expect(outcome!.accepted).toBe(true);
        const jobs = await deliveryJobsOf(
          app,
          trigger.events.map((e) => e.id),
        );
        const plan = planDeliveries({
          ...everyDestination,
          subscriptions,
          channelDefaults,
          requestedChannels: channels,
        });
        decided.push({
          on,
          channels,
          shared: jobs.length === 1,
          planned: plan.every((d) => d.status !== 'pending' || d.channel === 'inbox'),
        });
      }
    }
    expect(decided.filter((d) => d.shared !== d.planned)).toEqual([]);
    // Both answers occur: 110 of the 272 combinations can reach the inbox only.
    expect(decided.filter((d) => d.shared)).toHaveLength(110);
  });

  it('leaves the row of a contact named by external id alone untouched, and updates one given fields', async () => {
    const write = (recipients: Array<string | ContactFields>) =>
      writeTriggers(app.runtime.orm.em.fork(), app.runtime.boss!, [triggerInput(acme.tenantId, 'plain', recipients)]);
    const [first] = await write(['keep_1', { external_id: 'keep_2', name: 'Two' }]);
    const version = () =>
      sql<{ external_id: string; xmin: string; name: string | null }>(
        app,
        `SELECT external_id, xmin::text, name FROM contacts WHERE tenant_id = $1 AND external_id LIKE 'keep_%' ORDER BY external_id`,
        [acme.tenantId],
      );
    const before = await version();
    const [again] = await write(['keep_1', { external_id: 'keep_2', name: 'Deux' }]);
    const after = await version();
    expect(again!.contact_ids).toEqual(first!.contact_ids);
    // Named only: the same row version. Given a field: a new one, with the field.
    expect(after[0]).toEqual(before[0]);
    expect(after[1]!.xmin).not.toBe(before[1]!.xmin);
    expect(after[1]!.name).toBe('Deux');
  });

  it('finds the recipients that are contacts already by index, not by reading every contact of the tenant', async () => {
    await sql(
      app,
      `INSERT INTO contacts (id, tenant_id, external_id) SELECT gen_random_uuid(), $1, 'many_' || g FROM generate_series(1, 3000) AS g`,
      [acme.tenantId],
    );
    await sql(app, 'ANALYZE contacts');
    // pg_stat_xact_user_tables counts the current transaction's reads as they happen.
    const scans = await app.runtime.orm.em.fork().transactional(async (em) => {
      const [outcome] = await writeTriggers(em, app.runtime.boss!, [
        triggerInput(acme.tenantId, 'plain', ['many_17', 'many_2950']),
      ]);
      expect(outcome!.accepted).toBe(true);
      return query<{ seq_scan: string; idx_scan: string }>(
        em,
        `SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'contacts'`,
      );
    });
    expect(Number(scans[0]!.seq_scan)).toBe(0);
    expect(Number(scans[0]!.idx_scan)).toBeGreaterThanOrEqual(2);
  });

  it("holds its tenant's deletion back until it commits; the deletion then deletes the events it wrote", async () => {
    const doomed = await createTenantFixture(app, 'Doomed while triggering');
    await insertNotificationType(app, doomed.tenantId, { key: 'plain' });
    const deleter = new pg.Client({ connectionString: app.runtime.db.url });
    await deleter.connect();
    try {
      let deletion: Promise<unknown> | undefined;
      await app.runtime.orm.em.fork().transactional(async (tx) => {
        const [outcome] = await writeTriggers(tx, app.runtime.boss!, [
          triggerInput(doomed.tenantId, 'plain', ['known_1', 'known_2']),
        ]);
        expect(outcome!.accepted).toBe(true);
        deletion = deleter.query(`DELETE FROM tenants WHERE id = $1`, [doomed.tenantId]);
        await untilLockWait(app);
      });
      await deletion;
      expect(await sql(app, `SELECT id FROM events WHERE tenant_id = $1`, [doomed.tenantId])).toEqual([]);
    } finally {
      await deleter.end();
    }
  });

  it('creates a contact anew when it is deleted while the trigger waits for it', async () => {
    const write = () =>
      writeTriggers(app.runtime.orm.em.fork(), app.runtime.boss!, [
        triggerInput(acme.tenantId, 'plain', ['deleted_1']),
      ]);
    const [created] = await write();
    const deleter = new pg.Client({ connectionString: app.runtime.db.url });
    await deleter.connect();
    try {
      await deleter.query('BEGIN');
      await deleter.query(`DELETE FROM contacts WHERE tenant_id = $1 AND external_id = 'deleted_1'`, [acme.tenantId]);
      const pending = write();
      // The trigger waits on the deleted row's lock until the delete commits.
      await untilLockWait(app);
      await deleter.query('COMMIT');
      const [outcome] = await pending;
      expect(outcome!.accepted).toBe(true);
      const contact = await sqlOne<{ id: string }>(
        app,
        `SELECT id FROM contacts WHERE tenant_id = $1 AND external_id = 'deleted_1'`,
        [acme.tenantId],
      );
      expect(contact!.id).not.toBe(created!.contact_ids.deleted_1);
      expect(outcome!.contact_ids).toEqual({ deleted_1: contact!.id });
    } finally {
      await deleter.end();
    }
  });
});

/** A writer standing in for the statement: it records each batch and answers when told to. */
function controlledWriter() {
  const batches: TriggerInput[][] = [];
  const pending: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  const write = (triggers: TriggerInput[]) => {
    batches.push(triggers);
    return new Promise<TriggerOutcome[]>((resolve, reject) => {
      pending.push({
        resolve: () =>
          resolve(
            triggers.map(() => ({
              tenant_found: true,
              archived: false,
              type_found: true,
              brand_found: true,
              missing: [],
              accepted: true,
              contact_ids: {},
            })),
          ),
        reject,
      });
    });
  };
  /** Answers the oldest write still waiting, then lets the batcher take its next batch. */
  const finish = async (error?: Error) => {
    const next = pending.shift()!;
    if (error) next.reject(error);
    else next.resolve();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { batches, write, finish, pending };
}

const small = (name: string, recipients: Array<string | ContactFields> = [name]) =>
  triggerInput('00000000-0000-7000-8000-000000000001', 'plain', recipients, { name });
const nameOf = (t: TriggerInput) => t.variables.name;

describe('TriggerBatcher', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes a trigger at once and alone when no statement is in flight, and the next after it, though a second lane is allowed', async () => {
    const writer = controlledWriter();
    let commits = 0;
    const batcher = new TriggerBatcher(writer.write, 2, () => commits++);
    const first = batcher.submit(small('a'));
    const second = batcher.submit(small('b'));
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['a']]);
    await writer.finish();
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['a'], ['b']]);
    await writer.finish();
    await expect(first).resolves.toMatchObject({ accepted: true });
    await expect(second).resolves.toMatchObject({ accepted: true });
    expect(commits).toBe(2);
  });

  it('writes the queue in a second statement once the one in flight is held up, and never in more statements than its lanes', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const writer = controlledWriter();
    const batcher = new TriggerBatcher(writer.write, 2, () => {}, 50);
    const all = [batcher.submit(small('stuck')), batcher.submit(small('x'))];
    vi.advanceTimersByTime(49);
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['stuck']]);
    vi.advanceTimersByTime(1);
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['stuck'], ['x']]);
    all.push(batcher.submit(small('y')));
    vi.advanceTimersByTime(50); // both statements held up now: still two lanes
    expect(writer.batches).toHaveLength(2);
    await writer.finish();
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['stuck'], ['x'], ['y']]);
    await writer.finish();
    await writer.finish();
    expect(await Promise.all(all)).toHaveLength(3);
  });

  it('goes back to one statement at a time once the held-up statement is over', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const writer = controlledWriter();
    const batcher = new TriggerBatcher(writer.write, 2, () => {}, 50);
    const all = [batcher.submit(small('stuck'))];
    vi.advanceTimersByTime(50);
    all.push(batcher.submit(small('x')), batcher.submit(small('y')));
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['stuck'], ['x']]);
    await writer.finish(); // 'stuck' is over; x's lane, not held up, takes the queue
    expect(writer.batches).toHaveLength(2);
    await writer.finish();
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['stuck'], ['x'], ['y']]);
    all.push(batcher.submit(small('z')));
    expect(writer.batches).toHaveLength(3);
    await writer.finish();
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['stuck'], ['x'], ['y'], ['z']]);
    await writer.finish();
    expect(await Promise.all(all)).toHaveLength(4);
  });

  it('writes the triggers that arrive while the lanes are busy in one statement, in arrival order', async () => {
    const writer = controlledWriter();
    let commits = 0;
    const batcher = new TriggerBatcher(writer.write, 1, () => commits++);
    const all = ['a', 'b', 'c', 'd'].map((n) => batcher.submit(small(n)));
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['a']]);
    await writer.finish();
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['a'], ['b', 'c', 'd']]);
    await writer.finish();
    expect(await Promise.all(all)).toHaveLength(4);
    expect(commits).toBe(2);
    expect(writer.pending).toHaveLength(0);
  });

  it("sends the next statement before it answers the last statement's triggers", async () => {
    const writer = controlledWriter();
    let commits = 0;
    const answered: string[] = [];
    // What had been answered, and how many commits told, when each statement was sent.
    const seenAtWrite: Array<{ answered: string[]; commits: number }> = [];
    const batcher = new TriggerBatcher(
      (triggers) => {
        seenAtWrite.push({ answered: [...answered], commits });
        return writer.write(triggers);
      },
      1,
      () => commits++,
    );
    const all = ['a', 'b', 'c'].map((n) => batcher.submit(small(n)).then(() => answered.push(n)));
    await writer.finish();
    await writer.finish();
    await Promise.all(all);
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['a'], ['b', 'c']]);
    expect(seenAtWrite).toEqual([
      { answered: [], commits: 0 },
      { answered: [], commits: 0 },
    ]);
    expect(answered).toEqual(['a', 'b', 'c']);
    expect(commits).toBe(2);
  });

  it('never puts two triggers giving fields for the same contact into one statement', async () => {
    const writer = controlledWriter();
    const batcher = new TriggerBatcher(writer.write, 1, () => {});
    const all = [
      batcher.submit(small('busy')),
      batcher.submit(small('a', [{ external_id: 'c1', name: 'A' }])),
      batcher.submit(
        small('b', [
          { external_id: 'c1', name: 'B' },
          { external_id: 'c2', name: 'B' },
        ]),
      ),
      batcher.submit(small('c', ['c1'])),
      batcher.submit(small('d', [{ external_id: 'c2', name: 'D' }])),
      batcher.submit(small('e', [{ external_id: 'c3', name: 'E' }])),
    ];
    for (let i = 0; i < 3; i++) await writer.finish();
    // b waits behind a (c1); d gives fields for c2 as b does, so it waits behind b; c only names c1.
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['busy'], ['a', 'c', 'e'], ['b'], ['d']]);
    await writer.finish();
    expect(await Promise.all(all)).toHaveLength(6);
  });

  it('retries a failed statement trigger by trigger, so only the trigger at fault fails', async () => {
    const batches: string[][] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const batcher = new TriggerBatcher(
      async (triggers) => {
        batches.push(triggers.map((t) => String(nameOf(t))));
        if (nameOf(triggers[0]!) === 'busy') await gate;
        if (triggers.some((t) => nameOf(t) === 'bad')) throw new Error('value too long');
        return triggers.map(() => ({
          tenant_found: true,
          archived: false,
          type_found: true,
          brand_found: true,
          missing: [],
          accepted: true,
          contact_ids: {},
        }));
      },
      1,
      () => {},
    );
    const busy = batcher.submit(small('busy'));
    const results = Promise.allSettled(['ok_1', 'bad', 'ok_2'].map((n) => batcher.submit(small(n))));
    release();
    await busy;
    expect((await results).map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(batches).toEqual([['busy'], ['ok_1', 'bad', 'ok_2'], ['ok_1'], ['bad'], ['ok_2']]);
  });

  it('writes a trigger for many recipients at once, alone, even while the lanes are busy', async () => {
    const writer = controlledWriter();
    const batcher = new TriggerBatcher(writer.write, 1, () => {});
    void batcher.submit(small('busy'));
    void batcher.submit(small('queued'));
    void batcher.submit(
      small(
        'bulk',
        Array.from({ length: 20 }, (_, i) => `r${i}`),
      ),
    );
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['busy'], ['bulk']]);
    await writer.finish();
    await writer.finish();
    expect(writer.batches.map((b) => b.map(nameOf))).toEqual([['busy'], ['bulk'], ['queued']]);
    await writer.finish();
  });

  it('caps a statement at 64 triggers and 200 events', async () => {
    const writer = controlledWriter();
    const batcher = new TriggerBatcher(writer.write, 1, () => {});
    void batcher.submit(small('busy'));
    for (let i = 0; i < 70; i++) void batcher.submit(small(`t${i}`));
    for (let i = 0; i < 12; i++)
      void batcher.submit(
        small(
          `m${i}`,
          Array.from({ length: 19 }, (_, j) => `m${i}_${j}`),
        ),
      );
    for (let i = 0; i < 3; i++) await writer.finish();
    expect(writer.batches.map((b) => [b.length, b.reduce((n, t) => n + t.events.length, 0)])).toEqual([
      [1, 1],
      [64, 64],
      [6 + 10, 6 + 10 * 19],
      [2, 2 * 19],
    ]);
    await writer.finish();
  });
});

describe('concurrent triggers through the API', () => {
  it('answers each concurrent trigger for itself, with its own events and the right contacts', async () => {
    const requests = Array.from({ length: 40 }, (_, i) =>
      app.request('POST', '/v1/notifications', {
        token: acme.serviceKey,
        body:
          i % 10 === 9
            ? { type: 'no_such_type', recipients: [`conc_own_${i}`] }
            : { type: 'plain', recipients: [{ external_id: 'conc_shared', name: `Name ${i}` }, `conc_own_${i}`] },
      }),
    );
    const responses = await Promise.all(requests);
    expect(responses.map((r) => r.status)).toEqual(Array.from({ length: 40 }, (_, i) => (i % 10 === 9 ? 422 : 202)));
    const contacts = await sql<{ id: string; external_id: string; name: string | null }>(
      app,
      `SELECT id, external_id, name FROM contacts WHERE tenant_id = $1 AND external_id LIKE 'conc_%'`,
      [acme.tenantId],
    );
    const idOf = new Map(contacts.map((c) => [c.external_id, c.id]));
    expect(contacts).toHaveLength(1 + 36);
    expect(contacts.find((c) => c.external_id === 'conc_shared')!.name).toMatch(/^Name \d+$/);
    const eventIds: string[] = [];
    responses.forEach((res, i) => {
      if (res.status !== 202) return expect(res.body.detail[0].loc).toEqual(['body', 'type']);
      expect(
        res.body.events.map((e: { external_id: string; contact_id: string }) => [e.external_id, e.contact_id]),
      ).toEqual([
        ['conc_shared', idOf.get('conc_shared')],
        [`conc_own_${i}`, idOf.get(`conc_own_${i}`)],
      ]);
      eventIds.push(...res.body.events.map((e: { event_id: string }) => e.event_id));
    });
    const events = await sql<{ id: string; contact_id: string }>(
      app,
      `SELECT id, contact_id FROM events WHERE id = ANY($1::uuid[])`,
      [eventIds],
    );
    expect(events).toHaveLength(72);
    expect(new Set(eventIds).size).toBe(72);
  });

  it('answers other triggers while one waits for a contact that another transaction holds', async () => {
    const first = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: { type: 'plain', recipients: ['held_by_other'] },
    });
    expect(first.status).toBe(202);
    const holder = new pg.Client({ connectionString: app.runtime.db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT id FROM contacts WHERE tenant_id = $1 AND external_id = 'held_by_other' FOR UPDATE`, [
        acme.tenantId,
      ]);
      let heldAnswered = false;
      const held = app
        .request('POST', '/v1/notifications', {
          token: acme.serviceKey,
          body: { type: 'plain', recipients: ['held_by_other'] },
        })
        .then((res) => {
          heldAnswered = true;
          return res;
        });
      await untilLockWait(app);
      const others = Promise.all(
        ['free_1', 'free_2'].map((r) =>
          app.request('POST', '/v1/notifications', {
            token: acme.serviceKey,
            body: { type: 'plain', recipients: [r] },
          }),
        ),
      );
      const answered = await Promise.race([
        others,
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 5000)),
      ]);
      expect(answered?.map((r) => r.status)).toEqual([202, 202]);
      expect(heldAnswered).toBe(false);
      await holder.query('COMMIT');
      expect((await held).status).toBe(202);
    } finally {
      await holder.end();
    }
  });

  it('never deadlocks with bulk imports of the same contacts in the opposite order', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `lock_${String(i).padStart(2, '0')}`);
    const requests = Array.from({ length: 24 }, (_, round) =>
      round % 3 === 0
        ? app.request('POST', '/v1/contacts/bulk', {
            token: acme.serviceKey,
            body: { contacts: [...ids].reverse().map((id) => ({ external_id: id, name: `bulk ${round}` })) },
          })
        : app.request('POST', '/v1/notifications', {
            token: acme.serviceKey,
            body: {
              type: 'plain',
              recipients: (round % 2 ? ids : ids.slice(0, 10)).map((id) => ({
                external_id: id,
                name: `trigger ${round}`,
              })),
            },
          }),
    );
    const statuses = (await Promise.all(requests)).map((r) => r.status);
    expect(statuses).toEqual(Array.from({ length: 24 }, (_, round) => (round % 3 === 0 ? 200 : 202)));
  });
});

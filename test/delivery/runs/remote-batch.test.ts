// The batched remote run (server/delivery/runs/remote.ts) against a real SMTP server, loading the events
// itself or given them as the batched inbox run loaded them (without a lock): two runs over the same
// events at once (a job fetched again by a second worker) send each email once; events it cannot take
// (a workflow, started or held by another run) are left to the per-event run untouched; a run over
// events already delivered sends nothing again. A batch without inbox deliveries is sent and stored in
// one transaction (each delivery written once, with its outcome); one with an inbox delivery commits the
// inbox item before the sends; a store that fails after the sends leaves the events to their jobs'
// retries. Then with a worker: remote events share a job, and an address turned away for now retries
// the job without sending its other events again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { eventually } from '../../support/eventually.ts';
import {
  createTenantFixture,
  deliveryJobsOf,
  insertEmailTemplate,
  insertInboxTemplate,
  insertNotificationType,
  sql,
  waitForFinal,
  type TenantFixture,
} from '../../support/fixtures.ts';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer.ts';
import { deliverRemoteBatch } from '../../../server/delivery/runs/remote.ts';
import { loadEvents, type LoadedEvent } from '../../../server/delivery/stages/load.ts';
import { execute } from '../../../server/base/db/sql.ts';

let app: TestApp;
let smtp: SmtpPeer;
let acme: TenantFixture;
/** Addresses the SMTP peer turns away for now (451). */
const deferred = new Set<string>();
/** Addresses the SMTP peer answers only once their promise settles. */
const held = new Map<string, Promise<void>>();

beforeAll(async () => {
  smtp = await startSmtpPeer({ deferRecipients: deferred, holdRecipients: held });
  // The API role runs no workers: the tests run the batch themselves.
  app = await startTestApp({ role: 'api' });
  acme = await createTenantFixture(app, 'Acme');
  const res = await app.request('PUT', '/v1/email-transport', {
    token: acme.serviceKey,
    body: { host: smtp.host, port: smtp.port, secure: false, from_email: 'robot@acme.test' },
  });
  expect(res.status).toBe(200);
  await insertNotificationType(app, acme.tenantId, { key: 'mail', channels: { email: true } });
  await insertEmailTemplate(app, acme.tenantId, {
    type: 'mail',
    subject: 'Order {{ order }}',
    content: '<p>Hi {{ contact.external_id }}</p>',
  });
  await insertNotificationType(app, acme.tenantId, { key: 'mixed', channels: { inbox: true, email: true } });
  await insertInboxTemplate(app, acme.tenantId, { type: 'mixed', title: 'Order {{ order }}', content: 'Hi' });
  await insertEmailTemplate(app, acme.tenantId, { type: 'mixed', subject: 'Order {{ order }}', content: '<p>Hi</p>' });
});

afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

async function trigger(recipients: string[], order: string, type = 'mail'): Promise<string[]> {
  const res = await app.request('POST', '/v1/notifications', {
    token: acme.serviceKey,
    body: {
      type,
      recipients: recipients.map((r) => ({ external_id: r, email: `${r}@example.test` })),
      variables: { order },
    },
  });
  expect(res.status).toBe(202);
  return res.body.events.map((e: { event_id: string }) => e.event_id);
}

const received = (order: string) =>
  smtp.messages
    .filter((m) => m.parsed.subject === `Order ${order}`)
    .map((m) => m.envelope.to.join())
    .sort();

/** The events as the batched inbox run leaves them to this run: loaded without a lock. */
async function loadedWithoutLock(ids: string[]): Promise<Map<string, LoadedEvent>> {
  return new Map((await loadEvents(app.runtime.orm.em.fork(), ids)).map((e) => [e.id, e]));
}

/** Runs `work` while another session holds the event's row lock, as a run that took it would. */
async function whileHeld<T>(eventId: string, work: () => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: app.runtime.db.url });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT 1 FROM events WHERE id = $1 FOR UPDATE', [eventId]);
    const result = await work();
    await client.query('COMMIT');
    return result;
  } finally {
    await client.end();
  }
}

describe('the batched remote run', () => {
  it('sends each delivery once when two runs take the same events at once', async () => {
    const ids = await trigger(['ann', 'bob', 'cy'], 'A-1');
    const events = ids.map((id) => ({ id, finalAttempt: false }));
    const [first, second] = await Promise.all([
      deliverRemoteBatch(app.runtime, events),
      deliverRemoteBatch(app.runtime, events),
    ]);
    expect(new Set([...first.settled, ...second.settled])).toEqual(new Set(ids));
    expect(received('A-1')).toEqual(['ann@example.test', 'bob@example.test', 'cy@example.test']);
    const rows = await sql<{ status: string; attempts: number }>(
      app,
      `SELECT status, attempts FROM deliveries WHERE event_id = ANY($1::uuid[])`,
      [ids],
    );
    expect(rows).toEqual(Array.from({ length: 3 }, () => ({ status: 'sent', attempts: 1 })));
    const statuses = await sql<{ status: string }>(app, `SELECT status FROM events WHERE id = ANY($1::uuid[])`, [ids]);
    expect(statuses.map((s) => s.status)).toEqual(['delivered', 'delivered', 'delivered']);
    // Run again over the same events: final already, they are left to the per-event run (which settles
    // a final event at once), and nothing is sent twice.
    const again = await deliverRemoteBatch(app.runtime, events);
    expect(again.settled).toEqual(new Set());
    expect(received('A-1')).toHaveLength(3);
  });

  it('leaves an event another run holds to the per-event run, and delivers the rest without waiting for it', async () => {
    const ids = await trigger(['eve', 'fay'], 'A-3');
    const result = await whileHeld(ids[0]!, () =>
      deliverRemoteBatch(
        app.runtime,
        ids.map((id) => ({ id, finalAttempt: false })),
      ),
    );
    expect(result.settled).toEqual(new Set([ids[1]]));
    expect(received('A-3')).toEqual(['fay@example.test']);
  });

  it('given the events loaded without a lock, sends each delivery once when two runs take them at once', async () => {
    const ids = await trigger(['gus', 'hal'], 'A-4');
    const events = ids.map((id) => ({ id, finalAttempt: false }));
    const [first, second] = await Promise.all([
      deliverRemoteBatch(app.runtime, events, await loadedWithoutLock(ids)),
      deliverRemoteBatch(app.runtime, events, await loadedWithoutLock(ids)),
    ]);
    expect(new Set([...first.settled, ...second.settled])).toEqual(new Set(ids));
    expect(received('A-4')).toEqual(['gus@example.test', 'hal@example.test']);
    // Loaded again now that they are final: the lock passes them over, nothing is sent twice.
    expect((await deliverRemoteBatch(app.runtime, events, await loadedWithoutLock(ids))).settled).toEqual(new Set());
    expect(received('A-4')).toHaveLength(2);
  });

  it('given the events loaded without a lock, leaves one started since, or held, to the per-event run', async () => {
    const ids = await trigger(['ida', 'jon', 'kim'], 'A-5');
    const loaded = await loadedWithoutLock(ids);
    // After the load: another run starts the first event, and holds the second.
    await execute(app.runtime.orm.em.fork(), `UPDATE events SET status = 'processing' WHERE id = $1`, [ids[0]]);
    const result = await whileHeld(ids[1]!, () =>
      deliverRemoteBatch(
        app.runtime,
        ids.map((id) => ({ id, finalAttempt: false })),
        loaded,
      ),
    );
    expect(result.settled).toEqual(new Set([ids[2]]));
    expect(received('A-5')).toEqual(['kim@example.test']);
    expect(await sql(app, `SELECT 1 FROM deliveries WHERE event_id = ANY($1::uuid[])`, [[ids[0], ids[1]]])).toEqual([]);
  });

  it('sends and stores a batch without inbox deliveries in one transaction: each delivery is written once, with its outcome', async () => {
    deferred.add('max@example.test');
    try {
      const ids = await trigger(['lee', 'max'], 'A-6');
      const result = await deliverRemoteBatch(
        app.runtime,
        ids.map((id) => ({ id, finalAttempt: false })),
      );
      expect(result.settled).toEqual(new Set(ids));
      expect([...result.retryErrors.keys()]).toEqual([ids[1]]);
      expect(received('A-6')).toEqual(['lee@example.test']);
      // Written by the transaction that rolled the event up: no pending version was stored first.
      const rows = await sql(
        app,
        `SELECT d.destination, d.status, d.attempts, d.last_error IS NOT NULL AS has_error, d.provider_message_id IS NOT NULL AS has_provider_id,
                d.xmin::text = e.xmin::text AS written_with_event, e.status AS event_status
           FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.event_id = ANY($1::uuid[]) ORDER BY d.destination`,
        [ids],
      );
      expect(rows).toEqual([
        {
          destination: 'lee@example.test',
          status: 'sent',
          attempts: 1,
          has_error: false,
          has_provider_id: true,
          written_with_event: true,
          event_status: 'delivered',
        },
        // Turned away for now: pending, for the job's retry.
        {
          destination: 'max@example.test',
          status: 'pending',
          attempts: 1,
          has_error: true,
          has_provider_id: false,
          written_with_event: true,
          event_status: 'processing',
        },
      ]);
    } finally {
      deferred.clear();
    }
  });

  it('with an inbox delivery in the batch, commits the inbox item before the emails are sent', async () => {
    let release = () => {};
    held.set('nia@example.test', new Promise<void>((resolve) => (release = resolve)));
    try {
      const ids = await trigger(['nia'], 'A-7', 'mixed');
      const run = deliverRemoteBatch(
        app.runtime,
        ids.map((id) => ({ id, finalAttempt: false })),
      );
      // The email waits at the SMTP peer; the item is in the inbox meanwhile.
      await eventually(async () => (await sql(app, `SELECT 1 FROM inbox_items WHERE event_id = $1`, ids)).length > 0, {
        intervalMs: 20,
        message: 'the inbox item was not stored before the send',
      });
      expect(received('A-7')).toEqual([]);
      release();
      expect((await run).settled).toEqual(new Set(ids));
      expect(received('A-7')).toEqual(['nia@example.test']);
      expect((await sql<{ status: string }>(app, `SELECT status FROM events WHERE id = $1`, ids))[0]!.status).toBe(
        'delivered',
      );
    } finally {
      release();
      held.clear();
    }
  });

  it("when storing fails after the sends, leaves the events to their jobs' retries, not to the per-event run now", async () => {
    const ids = await trigger(['ole'], 'A-8');
    const em = app.runtime.orm.em.fork();
    await execute(
      em,
      `CREATE FUNCTION test_refuse_delivery() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`,
    );
    await execute(
      em,
      `CREATE TRIGGER test_refuse_delivery BEFORE INSERT ON deliveries FOR EACH ROW WHEN (NEW.destination = 'ole@example.test') EXECUTE FUNCTION test_refuse_delivery()`,
    );
    try {
      const result = await deliverRemoteBatch(
        app.runtime,
        ids.map((id) => ({ id, finalAttempt: false })),
      );
      expect(result.settled).toEqual(new Set(ids));
      expect(result.retryErrors.get(ids[0]!)?.join()).toContain('refused by the test');
      expect(received('A-8')).toEqual(['ole@example.test']);
      // Nothing of the transaction stayed: the retry starts the event afresh.
      expect(await sql(app, `SELECT 1 FROM deliveries WHERE event_id = $1`, ids)).toEqual([]);
      expect((await sql<{ status: string }>(app, `SELECT status FROM events WHERE id = $1`, ids))[0]!.status).toBe(
        'queued',
      );
    } finally {
      await execute(em, `DROP TRIGGER test_refuse_delivery ON deliveries`);
      await execute(em, `DROP FUNCTION test_refuse_delivery()`);
    }
  });

  it('leaves events of a type with a workflow to the per-event run, untouched', async () => {
    await execute(
      app.runtime.orm.em.fork(),
      `UPDATE notification_types SET workflow = '{"steps": [{"kind": "channel", "channel": "email"}]}'::jsonb WHERE tenant_id = $1 AND key = 'mail'`,
      [acme.tenantId],
    );
    try {
      const ids = await trigger(['dee'], 'A-2');
      const loaded = await loadedWithoutLock(ids);
      for (const given of [new Map(), loaded]) {
        const result = await deliverRemoteBatch(
          app.runtime,
          ids.map((id) => ({ id, finalAttempt: false })),
          given,
        );
        expect(result.settled).toEqual(new Set());
      }
      expect(await sql(app, `SELECT 1 FROM deliveries WHERE event_id = ANY($1::uuid[])`, [ids])).toEqual([]);
      expect(received('A-2')).toEqual([]);
    } finally {
      await execute(
        app.runtime.orm.em.fork(),
        `UPDATE notification_types SET workflow = NULL WHERE tenant_id = $1 AND key = 'mail'`,
        [acme.tenantId],
      );
    }
  });
});

describe('delivery jobs of remote events, run by a worker', () => {
  it('share a job; a deferred address retries the job, and its other events are not sent again', async () => {
    const worker = await startTestApp({
      role: 'worker',
      http: false,
      database: app.database,
      config: { encryptionKeys: app.config.encryptionKeys },
    });
    deferred.add('gus@example.test');
    try {
      const ids = await trigger(['gil', 'gus', 'guy'], 'B-1');
      const [job, ...others] = await deliveryJobsOf(app, ids);
      expect(others).toEqual([]);
      expect(job!.event_ids).toEqual([...ids].sort());
      const retryCount = async () =>
        (await sql<{ retry_count: number }>(app, `SELECT retry_count FROM pgboss.job WHERE id = $1`, [job!.id]))[0]
          ?.retry_count ?? 0;
      await eventually(async () => (await retryCount()) >= 1, {
        timeoutMs: 15_000,
        message: 'the job was not retried',
      });
      expect(received('B-1')).toEqual(['gil@example.test', 'guy@example.test']);
      deferred.delete('gus@example.test');
      expect((await waitForFinal(app, ids)).map((e) => e.status)).toEqual(['delivered', 'delivered', 'delivered']);
      // Each address got its message once: the retries passed over the events already final.
      expect(received('B-1')).toEqual(['gil@example.test', 'gus@example.test', 'guy@example.test']);
      const rows = await sql<{ status: string; attempts: number }>(
        app,
        `SELECT status, attempts FROM deliveries WHERE event_id = ANY($1::uuid[]) ORDER BY destination`,
        [ids],
      );
      expect(rows.map((r) => r.status)).toEqual(['sent', 'sent', 'sent']);
      expect(rows[0]!.attempts).toBe(1);
      expect(rows[1]!.attempts).toBeGreaterThanOrEqual(2);
      expect(rows[2]!.attempts).toBe(1);
    } finally {
      deferred.clear();
      await worker.close();
    }
  });
});

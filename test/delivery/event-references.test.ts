// What an event's deletion does to the rows delivered for it: its deliveries go with it, its inbox
// items stay without it (the contact's inbox is the contact's), whether the event goes by itself or
// with its tenant. What a contact's deletion does to its events: they stay, without it; and a
// broadcast page writes no event for a contact deleted since the page was read. A tenant's deletion
// deletes its events, those of a broadcast page in flight included, once the page commits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  createTenantFixture,
  insertInboxTemplate,
  insertNotificationType,
  sql,
  untilLockWait,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';
import { fanOutStatement } from '../../server/delivery/trigger/fan-out.ts';
import { newId } from '../../server/base/ids.ts';
import { query } from '../../server/base/db/sql.ts';
import pg from 'pg';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

async function deliveredEvents(fx: TenantFixture, recipients: string[]): Promise<string[]> {
  const res = await app.request('POST', '/v1/notifications', {
    token: fx.serviceKey,
    body: { type: 'news', recipients },
  });
  expect(res.status).toBe(202);
  const eventIds = (res.body.events as Array<{ event_id: string }>).map((e) => e.event_id);
  expect((await waitForFinal(app, eventIds)).map((e) => e.status)).toEqual(eventIds.map(() => 'delivered'));
  return eventIds;
}

async function tenantWithNews(name: string): Promise<TenantFixture> {
  const fx = await createTenantFixture(app, name);
  await insertNotificationType(app, fx.tenantId, { key: 'news' });
  await insertInboxTemplate(app, fx.tenantId, {
    type: 'news',
    title: 'News',
    content: 'Hello {{ contact.external_id }}',
  });
  return fx;
}

const deliveriesOf = (eventIds: string[]) =>
  sql<{ event_id: string }>(
    app,
    `SELECT event_id::text FROM deliveries WHERE event_id = ANY($1::uuid[]) ORDER BY event_id`,
    [eventIds],
  );
const itemsOf = (contactIds: string[]) =>
  sql<{ contact_id: string; event_id: string | null; body: string }>(
    app,
    `SELECT contact_id::text, event_id::text, body FROM inbox_items WHERE contact_id = ANY($1::uuid[]) ORDER BY body`,
    [contactIds],
  );

describe("an event's deletion", () => {
  it('deletes its deliveries and keeps its inbox items, without the event; other events keep theirs', async () => {
    const fx = await tenantWithNews('Acme');
    const [gone, kept] = await deliveredEvents(fx, ['ref_1', 'ref_2']);
    const contacts = await sql<{ id: string }>(
      app,
      `SELECT contact_id::text AS id FROM events WHERE id = ANY($1::uuid[])`,
      [[gone, kept]],
    );
    expect(await deliveriesOf([gone!, kept!])).toHaveLength(2);

    await sql(app, `DELETE FROM events WHERE id = $1`, [gone]);

    expect(await deliveriesOf([gone!, kept!])).toEqual([{ event_id: kept }]);
    const items = await itemsOf(contacts.map((c) => c.id));
    expect(items.map((i) => [i.body, i.event_id])).toEqual([
      ['Hello ref_1', null],
      ['Hello ref_2', kept],
    ]);
  });

  it("deletes the deliveries of every event of a deleted tenant, and leaves another tenant's alone", async () => {
    const [doomed, survivor] = [await tenantWithNews('Doomed'), await tenantWithNews('Survivor')];
    const doomedEvents = await deliveredEvents(doomed, ['t_1', 't_2', 't_3']);
    const survivorEvents = await deliveredEvents(survivor, ['t_1']);

    await sql(app, `DELETE FROM tenants WHERE id = $1`, [doomed.tenantId]);

    expect(await sql(app, `SELECT id FROM events WHERE id = ANY($1::uuid[])`, [doomedEvents])).toEqual([]);
    expect(await deliveriesOf(doomedEvents)).toEqual([]);
    expect(await sql(app, `SELECT id FROM inbox_items WHERE tenant_id = $1`, [doomed.tenantId])).toEqual([]);
    expect(await deliveriesOf(survivorEvents)).toHaveLength(1);
  });
});

describe("a tenant's deletion", () => {
  it('deletes its events without first clearing their contacts, whose deletion it cascades to', async () => {
    const fx = await tenantWithNews('Doomed with contacts');
    const eventIds = await deliveredEvents(fx, ['c_1', 'c_2']);
    const deleter = new pg.Client({ connectionString: app.runtime.db.url });
    await deleter.connect();
    try {
      await deleter.query('BEGIN');
      await deleter.query(`DELETE FROM tenants WHERE id = $1`, [fx.tenantId]);
      const [events] = (
        await deleter.query(`SELECT n_tup_upd, n_tup_del FROM pg_stat_xact_user_tables WHERE relname = 'events'`)
      ).rows;
      expect(Number(events.n_tup_upd)).toBe(0);
      expect(Number(events.n_tup_del)).toBe(eventIds.length);
      await deleter.query('COMMIT');
    } finally {
      await deleter.end();
    }
    expect(await sql(app, `SELECT id FROM events WHERE id = ANY($1::uuid[])`, [eventIds])).toEqual([]);
  });
});

describe("a contact's deletion", () => {
  it('keeps its events, without the contact; other contacts keep theirs', async () => {
    const fx = await tenantWithNews('Contacts');
    const [gone, kept] = await deliveredEvents(fx, ['c_gone', 'c_kept']);
    const contacts = await sql<{ id: string; external_id: string }>(
      app,
      `SELECT id::text, external_id FROM contacts WHERE tenant_id = $1 ORDER BY external_id`,
      [fx.tenantId],
    );
    const [goneContact, keptContact] = contacts;

    expect((await app.request('DELETE', `/v1/contacts/${goneContact!.id}`, { token: fx.serviceKey })).status).toBe(204);

    const events = await sql<{ id: string; contact_id: string | null }>(
      app,
      `SELECT id::text, contact_id::text FROM events WHERE id = ANY($1::uuid[]) ORDER BY external_id`,
      [[gone, kept]],
    );
    expect(events).toEqual([
      { id: gone, contact_id: null },
      { id: kept, contact_id: keptContact!.id },
    ]);
    expect(await deliveriesOf([gone!, kept!])).toHaveLength(2);
  });
});

describe('a broadcast page', () => {
  it('writes no event for a contact deleted since the page was read, and the others', async () => {
    const fx = await tenantWithNews('Broadcaster');
    const contacts = await sql<{ id: string; external_id: string }>(
      app,
      `INSERT INTO contacts (id, tenant_id, external_id) SELECT gen_random_uuid(), $1, 'page_' || i FROM generate_series(1, 3) AS i RETURNING id::text, external_id`,
      [fx.tenantId],
    );
    const broadcastId = newId();
    await sql(
      app,
      `INSERT INTO broadcasts (id, tenant_id, type_key, audience, status) VALUES ($1, $2, 'news', '{"all_contacts": true}', 'running')`,
      [broadcastId, fx.tenantId],
    );
    await sql(app, `DELETE FROM contacts WHERE id = $1`, [contacts[1]!.id]);

    const eventIds = contacts.map(() => newId());
    const statement = await fanOutStatement(app.runtime.boss!);
    const [written] = await query<{ running: number; inserted: number; enqueued: number }>(
      app.runtime.orm.em.fork(),
      statement,
      [
        broadcastId,
        eventIds,
        contacts.map((c) => c.id),
        contacts.map((c) => c.external_id),
        contacts.map(() => null),
        'page_3',
      ],
    );

    expect(written).toMatchObject({ running: 1, inserted: 2, enqueued: 2 });
    const events = await sql<{ contact_id: string }>(
      app,
      `SELECT contact_id::text FROM events WHERE broadcast_id = $1 ORDER BY external_id`,
      [broadcastId],
    );
    expect(events.map((e) => e.contact_id)).toEqual([contacts[0]!.id, contacts[2]!.id]);
  });

  it("holds its tenant's deletion back until it commits; the deletion then deletes the page's events", async () => {
    await withPageInFlight('Doomed broadcaster', async ({ fx, deleter, commit }) => {
      const deletion = deleter.query(`DELETE FROM tenants WHERE id = $1`, [fx.tenantId]);
      await untilLockWait(app);
      await commit();
      await deletion;
      expect(await sql(app, `SELECT id FROM events WHERE tenant_id = $1`, [fx.tenantId])).toEqual([]);
    });
  });

  it("holds a contact's deletion back until its event is committed; the deletion then clears the event's contact", async () => {
    await withPageInFlight('Held', async ({ contactId, broadcastId, deleter, commit }) => {
      await deleter.query(`SET lock_timeout = '300ms'`);
      await expect(deleter.query(`DELETE FROM contacts WHERE id = $1`, [contactId])).rejects.toMatchObject({
        code: '55P03',
      }); // lock_not_available
      await commit();
      await deleter.query(`DELETE FROM contacts WHERE id = $1`, [contactId]);
      expect(await sql(app, `SELECT contact_id FROM events WHERE broadcast_id = $1`, [broadcastId])).toEqual([
        { contact_id: null },
      ]);
    });
  });
});

/**
 * A running broadcast's page of one new contact written by `writer` in a transaction left open, and a
 * second connection (`deleter`) to race it; `commit` commits the page.
 */
async function withPageInFlight(
  tenantName: string,
  race: (page: {
    fx: TenantFixture;
    contactId: string;
    broadcastId: string;
    deleter: pg.Client;
    commit: () => Promise<unknown>;
  }) => Promise<void>,
): Promise<void> {
  const fx = await tenantWithNews(tenantName);
  const [contact] = await sql<{ id: string }>(
    app,
    `INSERT INTO contacts (id, tenant_id, external_id) VALUES (gen_random_uuid(), $1, 'on_page') RETURNING id::text`,
    [fx.tenantId],
  );
  const broadcastId = newId();
  await sql(
    app,
    `INSERT INTO broadcasts (id, tenant_id, type_key, audience, status) VALUES ($1, $2, 'news', '{"all_contacts": true}', 'running')`,
    [broadcastId, fx.tenantId],
  );
  const [writer, deleter] = [
    new pg.Client({ connectionString: app.runtime.db.url }),
    new pg.Client({ connectionString: app.runtime.db.url }),
  ];
  await Promise.all([writer.connect(), deleter.connect()]);
  try {
    await writer.query('BEGIN');
    const [written] = (
      await writer.query(await fanOutStatement(app.runtime.boss!), [
        broadcastId,
        [newId()],
        [contact!.id],
        ['on_page'],
        [null],
        'on_page',
      ])
    ).rows;
    expect(written).toMatchObject({ inserted: 1 });
    await race({ fx, contactId: contact!.id, broadcastId, deleter, commit: () => writer.query('COMMIT') });
  } finally {
    await Promise.all([writer.end(), deleter.end()]);
  }
}

// What an event's deletion does to the rows delivered for it: its deliveries go with it, its inbox
// items stay without it (the contact's inbox is the contact's), whether the event goes by itself or
// with its tenant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { createTenantFixture, insertInboxTemplate, insertNotificationType, sql, waitForFinal, type TenantFixture } from './support/fixtures.ts';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

async function deliveredEvents(fx: TenantFixture, recipients: string[]): Promise<string[]> {
  const res = await app.request('POST', '/v1/notifications', { token: fx.serviceKey, body: { type: 'news', recipients } });
  expect(res.status).toBe(202);
  const eventIds = (res.body.events as Array<{ event_id: string }>).map((e) => e.event_id);
  expect((await waitForFinal(app, eventIds)).map((e) => e.status)).toEqual(eventIds.map(() => 'delivered'));
  return eventIds;
}

async function tenantWithNews(name: string): Promise<TenantFixture> {
  const fx = await createTenantFixture(app, name);
  await insertNotificationType(app, fx.tenantId, { key: 'news' });
  await insertInboxTemplate(app, fx.tenantId, { type: 'news', title: 'News', content: 'Hello {{ contact.external_id }}' });
  return fx;
}

const deliveriesOf = (eventIds: string[]) => sql<{ event_id: string }>(app, `SELECT event_id::text FROM deliveries WHERE event_id = ANY($1::uuid[]) ORDER BY event_id`, [eventIds]);
const itemsOf = (contactIds: string[]) =>
  sql<{ contact_id: string; event_id: string | null; body: string }>(app, `SELECT contact_id::text, event_id::text, body FROM inbox_items WHERE contact_id = ANY($1::uuid[]) ORDER BY body`, [contactIds]);

describe("an event's deletion", () => {
  it('deletes its deliveries and keeps its inbox items, without the event; other events keep theirs', async () => {
    const fx = await tenantWithNews('Acme');
    const [gone, kept] = await deliveredEvents(fx, ['ref_1', 'ref_2']);
    const contacts = await sql<{ id: string }>(app, `SELECT contact_id::text AS id FROM events WHERE id = ANY($1::uuid[])`, [[gone, kept]]);
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

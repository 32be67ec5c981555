// Retention: old final events go with their deliveries and nothing keeps pointing at them; recent
// events, events still open and events an open digest collects stay; read inbox items go at the
// retention age, unread ones at their own cap; a run deletes more rows than one batch holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTenantFixture, sql, type TenantFixture } from '../support/fixtures.ts';
import { randomUUID } from 'node:crypto';
import { idFloor, newId } from '../../server/base/ids.ts';
import { pruneRetained, retentionPrune } from '../../server/jobs/retention-prune.ts';
import { jobs } from '../../server/jobs/index.ts';

const DAY = 24 * 3600 * 1000;
const NOW = Date.parse('2030-06-01T00:00:00Z');
const config = { retentionDays: 90, inboxUnreadRetentionDays: 365 };

let app: TestApp;
let fx: TenantFixture;
let contactId: string;

beforeAll(async () => {
  app = await startTestApp();
  fx = await createTenantFixture(app, 'Retention');
  contactId = newId();
  await sql(app, `INSERT INTO contacts (id, tenant_id, external_id) VALUES ($1, $2, 'c1')`, [contactId, fx.tenantId]);
});
afterAll(async () => {
  await app?.close();
});

const ago = (days: number) => new Date(NOW - days * DAY);
/**
 * A row's id as if it were made `days` ago (a UUIDv7 of that millisecond; newId never goes back in
 * time within a process): ids order rows by creation, which retention goes by.
 */
const idAgo = (days: number) => `${idFloor(ago(days).getTime()).slice(0, 14)}7${randomUUID().slice(15)}`;

/** An event of `status` created `days` ago, with an inbox delivery and its inbox item. */
async function event(days: number, status: string, item: { read?: boolean } = {}): Promise<string> {
  const id = idAgo(days);
  const deliveryId = idAgo(days);
  await sql(
    app,
    `INSERT INTO events (id, tenant_id, type_key, contact_id, external_id, status, created_at, updated_at)
     VALUES ($1, $2, 'news', $3, 'c1', $4, $5, $5)`,
    [id, fx.tenantId, contactId, status, ago(days)],
  );
  await sql(
    app,
    `INSERT INTO deliveries (id, event_id, tenant_id, channel, status, created_at) VALUES ($1, $2, $3, 'inbox', 'delivered', $4)`,
    [deliveryId, id, fx.tenantId, ago(days)],
  );
  await sql(
    app,
    `INSERT INTO inbox_items (id, tenant_id, contact_id, event_id, delivery_id, type_key, created_at, read_at)
     VALUES ($1, $2, $3, $4, $5, 'news', $6, $7)`,
    [idAgo(days), fx.tenantId, contactId, id, deliveryId, ago(days), item.read ? ago(days) : null],
  );
  return id;
}

const exists = async (table: string, id: string) =>
  (await sql(app, `SELECT 1 FROM ${table} WHERE id = $1`, [id])).length === 1;

/** `count` delivered events without deliveries, created 100 days ago. */
const oldDeliveredEvents = (count: number) =>
  sql(
    app,
    `INSERT INTO events (id, tenant_id, type_key, external_id, status, created_at, updated_at)
     SELECT id, $1, 'news', 'c1', 'delivered', $2, $2 FROM unnest($3::uuid[]) AS id`,
    [fx.tenantId, ago(100), Array.from({ length: count }, () => idAgo(100))],
  );

describe('retention', () => {
  it('selects by creation time through ids: idFloor(t) is below every id made at t and after', () => {
    const t = Date.now();
    const id = newId(t);
    expect(id >= idFloor(t)).toBe(true);
    expect(id < idFloor(t + 60_000)).toBe(true);
    expect(id > idFloor(t - 60_000)).toBe(true);
    expect(idFloor(Date.parse('2026-12-02T00:00:00.000Z'))).toBe('01a2340d-0c00-0000-0000-000000000000');
  });

  it('is a scheduled singleton job', () => {
    expect(jobs).toContain(retentionPrune);
    expect(retentionPrune.queue.policy).toBe('singleton');
    expect(retentionPrune.schedule).toBeTruthy();
  });

  it('prunes old final events with their deliveries and leaves nothing dangling', async () => {
    const oldDelivered = await event(100, 'delivered', { read: true });
    const oldFailed = await event(95, 'failed');
    const recent = await event(10, 'delivered', { read: true });
    const oldOpen = await event(200, 'scheduled');
    const opener = await event(120, 'delivered');
    await sql(
      app,
      `INSERT INTO digests (opener_event_id, tenant_id, external_id, type_key, key, window_end, max_events, count, events)
       VALUES ($1, $2, 'c1', 'news', 'k', $3, 10, 1, '[]')`,
      [opener, fx.tenantId, ago(-1)],
    );

    const removed = await pruneRetained(app.runtime.orm.em.fork(), config, NOW);
    expect(removed.events).toBe(2);

    for (const id of [oldDelivered, oldFailed]) expect(await exists('events', id)).toBe(false);
    for (const id of [recent, oldOpen, opener]) expect(await exists('events', id)).toBe(true);
    expect(
      await sql(app, `SELECT 1 FROM deliveries d WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = d.event_id)`),
    ).toEqual([]);
    expect(
      await sql(
        app,
        `SELECT 1 FROM inbox_items i WHERE (i.event_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = i.event_id))
            OR (i.delivery_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = i.delivery_id))`,
      ),
    ).toEqual([]);
    // the old read item went; the unread one of the pruned failed event stays, without its event
    expect(await sql(app, `SELECT 1 FROM inbox_items WHERE event_id IS NULL AND read_at IS NOT NULL`)).toEqual([]);
    expect((await sql(app, `SELECT 1 FROM inbox_items WHERE event_id IS NULL AND read_at IS NULL`)).length).toBe(1);
  });

  it('keeps an event made long ago but final only lately, as long after it became final', async () => {
    const id = idAgo(100);
    await sql(
      app,
      `INSERT INTO events (id, tenant_id, type_key, external_id, status, created_at, updated_at)
       VALUES ($1, $2, 'news', 'c1', 'delivered', $3, $4)`,
      [id, fx.tenantId, ago(100), ago(10)],
    );
    await pruneRetained(app.runtime.orm.em.fork(), config, NOW);
    expect(await exists('events', id)).toBe(true);
    await sql(app, `UPDATE events SET updated_at = $2 WHERE id = $1`, [id, ago(91)]);
    await pruneRetained(app.runtime.orm.em.fork(), config, NOW);
    expect(await exists('events', id)).toBe(false);
  });

  it('keeps unread inbox items to their own cap', async () => {
    await sql(app, `DELETE FROM inbox_items`);
    const item = (days: number, read: boolean) =>
      sql(
        app,
        `INSERT INTO inbox_items (id, tenant_id, contact_id, type_key, created_at, read_at, archived_at)
         VALUES ($1, $2, $3, 'news', $4, $5, NULL) RETURNING id::text`,
        [idAgo(days), fx.tenantId, contactId, ago(days), read ? ago(days) : null],
      );
    await item(100, true);
    await item(100, false);
    await item(300, false);
    await item(400, false);
    await item(10, true);
    const removed = await pruneRetained(app.runtime.orm.em.fork(), config, NOW);
    expect(removed.inboxItems).toBe(2);
    const left = await sql<{ days: number; read: boolean }>(
      app,
      `SELECT round(extract(epoch FROM $1::timestamptz - created_at) / 86400)::int AS days, read_at IS NOT NULL AS read
         FROM inbox_items ORDER BY created_at`,
      [new Date(NOW)],
    );
    expect(left).toEqual([
      { days: 300, read: false },
      { days: 100, read: false },
      { days: 10, read: true },
    ]);
  });

  it('walks past unread items kept to their cap to find the read ones behind them, batch by batch', async () => {
    await sql(app, `DELETE FROM inbox_items`);
    await sql(
      app,
      `INSERT INTO inbox_items (id, tenant_id, contact_id, type_key, created_at)
       SELECT id, $1, $2, 'news', $3 FROM unnest($4::uuid[]) AS id`,
      [fx.tenantId, contactId, ago(200), Array.from({ length: 25 }, () => idAgo(200))],
    );
    await sql(
      app,
      `INSERT INTO inbox_items (id, tenant_id, contact_id, type_key, created_at, read_at) VALUES ($1, $2, $3, 'news', $4, $4)`,
      [idAgo(150), fx.tenantId, contactId, ago(150)],
    );
    const removed = await pruneRetained(app.runtime.orm.em.fork(), config, NOW, { batchSize: 10, budgetMs: 60_000 });
    expect(removed.inboxItems).toBe(1);
    expect(await sql(app, `SELECT 1 FROM inbox_items WHERE read_at IS NOT NULL`)).toEqual([]);
    expect((await sql(app, `SELECT 1 FROM inbox_items`)).length).toBe(25);
  });

  it('deletes more rows than one batch, batch by batch', async () => {
    await oldDeliveredEvents(25);
    const removed = await pruneRetained(app.runtime.orm.em.fork(), config, NOW, { batchSize: 10, budgetMs: 60_000 });
    expect(removed.events).toBe(25);
    expect(
      await sql(
        app,
        `SELECT 1 FROM events e WHERE created_at < $1 AND status = 'delivered'
          AND NOT EXISTS (SELECT 1 FROM digests d WHERE d.opener_event_id = e.id)`,
        [ago(90)],
      ),
    ).toEqual([]);
  });

  it('stops when its time budget is spent', async () => {
    await oldDeliveredEvents(25);
    const removed = await pruneRetained(app.runtime.orm.em.fork(), config, NOW, { batchSize: 10, budgetMs: 0 });
    expect(removed.events).toBe(10);
    await pruneRetained(app.runtime.orm.em.fork(), config, NOW);
  });
});

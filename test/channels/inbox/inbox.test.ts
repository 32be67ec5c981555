// The inbox API: listing with cursor paging, filters and the unread count; read/seen/archived marks
// and read-all, each appended to the contact's stream log; credentials and scope.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { createTenantFixture, deliverInboxItem, type TenantFixture } from '../../support/fixtures.ts';
import { readStreamLog } from '../../../server/channels/inbox/log.ts';
import { newId } from '../../../server/base/ids.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  globex = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  await app?.close();
});

/** The contact's stream log, as its streams replay it. */
const streamLog = (contactId: string) => readStreamLog(app.runtime.orm.em.fork(), contactId, 0n, 1000);

describe('GET /v1/contacts/{id}/notifications', () => {
  it('lists items newest first with their fields and the unread count', async () => {
    const id = await acme.contact('inbox-1');
    const first = await deliverInboxItem(app, acme.tenantId, id, { title: 'One', data: { order: 1 } });
    const second = await deliverInboxItem(app, acme.tenantId, id, { title: 'Two' });
    const res = await app.request('GET', `/v1/contacts/${id}/notifications`, { token: acme.tokenFor(id) });
    expect(res.status).toBe(200);
    const expected = [first, second].sort((a, b) => (a.id < b.id ? 1 : -1));
    expect(res.body).toEqual({ items: expected, next_cursor: null, unread_count: 2 });
    expect(first).toMatchObject({
      type: 'order_shipped',
      title: 'One',
      body: 'Your order shipped',
      data: { order: 1 },
      read_at: null,
      seen_at: null,
      archived_at: null,
    });
  });

  it('pages with a cursor over every item exactly once', async () => {
    const id = await acme.contact('inbox-paging');
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await deliverInboxItem(app, acme.tenantId, id, { title: `#${i}` })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { body: { items: Array<{ id: string }>; next_cursor: string | null } } = await app.request(
        'GET',
        `/v1/contacts/${id}/notifications?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
        { token: acme.tokenFor(id) },
      );
      seen.push(...res.body.items.map((item) => item.id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].sort().reverse());
  });

  it('filters by status and archived', async () => {
    const id = await acme.contact('inbox-filters');
    const token = acme.tokenFor(id);
    const read = await deliverInboxItem(app, acme.tenantId, id, { title: 'read' });
    const unread = await deliverInboxItem(app, acme.tenantId, id, { title: 'unread' });
    const archived = await deliverInboxItem(app, acme.tenantId, id, { title: 'archived' });
    await app.request('PATCH', `/v1/contacts/${id}/notifications/${read.id}`, { token, body: { read: true } });
    await app.request('PATCH', `/v1/contacts/${id}/notifications/${archived.id}`, { token, body: { archived: true } });
    const titles = async (qs: string) =>
      (await app.request('GET', `/v1/contacts/${id}/notifications?${qs}`, { token })).body.items
        .map((i: { title: string }) => i.title)
        .sort();
    expect(await titles('')).toEqual(['read', 'unread']);
    expect(await titles('status=unread')).toEqual(['unread']);
    expect(await titles('status=read')).toEqual(['read']);
    expect(await titles('archived=true')).toEqual(['archived']);
    const res = await app.request('GET', `/v1/contacts/${id}/notifications?status=read`, { token });
    // The unread count ignores filters and archived items.
    expect(res.body.unread_count).toBe(1);
    expect(unread.read_at).toBeNull();
  });

  it('answers 422 for a bad limit, status, archived or cursor', async () => {
    const id = await acme.contact('inbox-422');
    const token = acme.tokenFor(id);
    for (const qs of ['limit=0', 'limit=201', 'status=new', 'archived=maybe', 'cursor=abc']) {
      const res = await app.request('GET', `/v1/contacts/${id}/notifications?${qs}`, { token });
      expect(res.status, qs).toBe(422);
      expect(res.body.detail[0].loc[0]).toBe('query');
    }
  });

  it("answers 404 for another contact's token and across tenants, 401 without credential", async () => {
    const id = await acme.contact('inbox-scope');
    const other = await acme.contact('inbox-scope-2');
    const foreign = await globex.contact('inbox-scope-g');
    expect((await app.request('GET', `/v1/contacts/${id}/notifications`, { token: acme.tokenFor(other) })).status).toBe(
      404,
    );
    expect(
      (await app.request('GET', `/v1/contacts/${id}/notifications`, { token: globex.tokenFor(foreign) })).status,
    ).toBe(404);
    // A token claiming a contact id of another tenant finds nothing either.
    expect((await app.request('GET', `/v1/contacts/${id}/notifications`, { token: globex.tokenFor(id) })).status).toBe(
      404,
    );
    expect((await app.request('GET', `/v1/contacts/${id}/notifications`)).status).toBe(401);
  });

  it('answers 403 for a service key: the inbox takes the contact token (mint one for the contact)', async () => {
    const id = await acme.contact('inbox-sk');
    expect((await app.request('GET', `/v1/contacts/${id}/notifications`, { token: acme.serviceKey })).status).toBe(403);
  });
});

describe('PATCH /v1/contacts/{id}/notifications/{notification_id}', () => {
  it('marks read (and seen), appends updated to the stream, and unmarks', async () => {
    const id = await acme.contact('patch-1');
    const token = acme.tokenFor(id);
    const item = await deliverInboxItem(app, acme.tenantId, id);
    const before = (await streamLog(id)).length;
    const res = await app.request('PATCH', `/v1/contacts/${id}/notifications/${item.id}`, {
      token,
      body: { read: true },
    });
    expect(res.status).toBe(200);
    expect(res.body.read_at).toEqual(expect.any(String));
    expect(res.body.seen_at).toEqual(expect.any(String));
    const log = (await streamLog(id)).slice(before);
    // The stream hub follows it with the counts (stream.test.ts); they are not stored.
    expect(log.map((e) => e.kind)).toEqual(['updated']);
    expect(log[0]!.payload).toEqual(res.body);
    // Marking read again changes nothing and appends nothing.
    const again = await app.request('PATCH', `/v1/contacts/${id}/notifications/${item.id}`, {
      token,
      body: { read: true },
    });
    expect(again.body.read_at).toBe(res.body.read_at);
    expect((await streamLog(id)).length).toBe(before + 1);
    const unread = await app.request('PATCH', `/v1/contacts/${id}/notifications/${item.id}`, {
      token,
      body: { read: false, archived: true },
    });
    expect(unread.body).toMatchObject({ read_at: null, archived_at: expect.any(String) });
  });

  it('marks seen without reading', async () => {
    const id = await acme.contact('patch-2');
    const item = await deliverInboxItem(app, acme.tenantId, id);
    const res = await app.request('PATCH', `/v1/contacts/${id}/notifications/${item.id}`, {
      token: acme.tokenFor(id),
      body: { seen: true },
    });
    expect(res.body).toMatchObject({ seen_at: expect.any(String), read_at: null });
  });

  it("answers 404 for an unknown item, another contact's item and across tenants", async () => {
    const id = await acme.contact('patch-3');
    const other = await acme.contact('patch-4');
    const item = await deliverInboxItem(app, acme.tenantId, other);
    expect(
      (
        await app.request('PATCH', `/v1/contacts/${id}/notifications/${newId()}`, {
          token: acme.tokenFor(id),
          body: { read: true },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await app.request('PATCH', `/v1/contacts/${id}/notifications/${item.id}`, {
          token: acme.tokenFor(id),
          body: { read: true },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await app.request('PATCH', `/v1/contacts/${other}/notifications/${item.id}`, {
          token: acme.tokenFor(id),
          body: { read: true },
        })
      ).status,
    ).toBe(404);
    const foreign = await globex.contact('patch-g');
    expect(
      (
        await app.request('PATCH', `/v1/contacts/${other}/notifications/${item.id}`, {
          token: globex.tokenFor(foreign),
          body: { read: true },
        })
      ).status,
    ).toBe(404);
    // None of the refused calls touched the item.
    const owned = await app.request('GET', `/v1/contacts/${other}/notifications`, { token: acme.tokenFor(other) });
    expect(owned.body.items.find((i: { id: string }) => i.id === item.id)).toMatchObject({
      read_at: null,
      seen_at: null,
    });
  });

  it('answers 422 for an empty or malformed body, 401 without credential, 403 for a service key', async () => {
    const id = await acme.contact('patch-5');
    const item = await deliverInboxItem(app, acme.tenantId, id);
    const path = `/v1/contacts/${id}/notifications/${item.id}`;
    expect((await app.request('PATCH', path, { token: acme.tokenFor(id), body: {} })).status).toBe(422);
    expect((await app.request('PATCH', path, { token: acme.tokenFor(id), body: { read: 'yes' } })).status).toBe(422);
    expect((await app.request('PATCH', path, { body: { read: true } })).status).toBe(401);
    expect((await app.request('PATCH', path, { token: acme.serviceKey, body: { read: true } })).status).toBe(403);
  });
});

describe('POST /v1/contacts/{id}/notifications/read-all', () => {
  it('marks every unread item read and appends one counts event', async () => {
    const id = await acme.contact('readall-1');
    const token = acme.tokenFor(id);
    for (let i = 0; i < 3; i++) await deliverInboxItem(app, acme.tenantId, id);
    const before = (await streamLog(id)).length;
    const res = await app.request('POST', `/v1/contacts/${id}/notifications/read-all`, { token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ updated: 3 });
    const log = (await streamLog(id)).slice(before);
    expect(log).toEqual([expect.objectContaining({ kind: 'counts', payload: { unread_count: 0, unseen_count: 0 } })]);
    const list = await app.request('GET', `/v1/contacts/${id}/notifications`, { token });
    expect(list.body.unread_count).toBe(0);
    expect((await app.request('POST', `/v1/contacts/${id}/notifications/read-all`, { token })).body).toEqual({
      updated: 0,
    });
    expect((await streamLog(id)).length).toBe(before + 1);
  });

  it("answers 404 for another contact's token and across tenants, 401, 403 for a service key", async () => {
    const id = await acme.contact('readall-2');
    const other = await acme.contact('readall-3');
    await deliverInboxItem(app, acme.tenantId, id);
    const path = `/v1/contacts/${id}/notifications/read-all`;
    expect((await app.request('POST', path, { token: acme.tokenFor(other) })).status).toBe(404);
    expect((await app.request('POST', path, { token: globex.tokenFor(id) })).status).toBe(404);
    expect((await app.request('POST', path)).status).toBe(401);
    expect((await app.request('POST', path, { token: acme.serviceKey })).status).toBe(403);
    expect(
      (await app.request('GET', `/v1/contacts/${id}/notifications`, { token: acme.tokenFor(id) })).body.unread_count,
    ).toBe(1);
  });

  it('answers 422 for a malformed contact id', async () => {
    const id = await acme.contact('readall-4');
    expect(
      (await app.request('POST', `/v1/contacts/nope/notifications/read-all`, { token: acme.tokenFor(id) })).status,
    ).toBe(422);
  });
});

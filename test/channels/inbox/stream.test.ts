// The real-time stream over the real HTTP server: live delivery, Last-Event-ID replay after a
// disconnect, heartbeats, delivery across processes (LISTEN/NOTIFY), listener reconnects, token
// expiry and shutdown; credentials and scope.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { eventually } from '../../support/eventually.ts';
import { createTenantFixture, deliverInboxItem, untilLockWait, type TenantFixture } from '../../support/fixtures.ts';
import { signal } from '../../support/signal.ts';
import { execute } from '../../../server/base/db/sql.ts';

interface SseEvent {
  id: string | undefined;
  event: string;
  data: any;
}

/** A fetch-based SSE client, as a browser front end would write it (EventSource cannot send headers). */
class StreamClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  status = 0;
  ended = false;
  readonly #controller = new AbortController();
  #waiters: Array<() => void> = [];
  #done!: Promise<void>;

  static async open(url: string, token: string, lastEventId?: string): Promise<StreamClient> {
    const client = new StreamClient();
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const res = await fetch(url, { headers, signal: client.#controller.signal });
    client.status = res.status;
    client.contentType = res.headers.get('content-type');
    client.#done = client.#read(res.body!);
    return client;
  }

  contentType: string | null = null;

  async #read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          this.#parse(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
        }
        this.#notify();
      }
    } catch {
      // aborted by close()
    }
    this.ended = true;
    this.#notify();
  }

  #parse(block: string): void {
    let id: string | undefined;
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
      else if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length > 0) this.events.push({ id, event, data: JSON.parse(data.join('\n')) });
  }

  #notify(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /** Waits until `predicate` holds (checked on every chunk), failing after `timeoutMs`. */
  async until(predicate: (client: StreamClient) => boolean, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      if (Date.now() > deadline) throw new Error(`stream condition not met; events: ${JSON.stringify(this.events)}`);
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  ofKind(kind: string): SseEvent[] {
    return this.events.filter((e) => e.event === kind);
  }

  get lastId(): string | undefined {
    return this.events.at(-1)?.id;
  }

  async close(): Promise<void> {
    this.#controller.abort();
    await this.#done.catch(() => undefined);
  }
}

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;

beforeAll(async () => {
  app = await startTestApp({ config: { streamHeartbeatMs: 100 } });
  acme = await createTenantFixture(app, 'Acme');
  globex = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  await app?.close();
});

const streamUrl = (base: string, contactId: string) => `${base}/v1/contacts/${contactId}/stream`;

describe('GET /v1/contacts/{id}/stream', () => {
  it('sends counts on connect, then each delivered item and the new counts, live', async () => {
    const id = await acme.contact('live-1');
    await deliverInboxItem(app, acme.tenantId, id, { title: 'before connecting' });
    const client = await StreamClient.open(streamUrl(app.url, id), acme.tokenFor(id));
    try {
      expect(client.status).toBe(200);
      expect(client.contentType).toMatch(/^text\/event-stream/);
      await client.until((c) => c.events.length >= 1);
      // No Last-Event-ID: nothing is replayed, the counts come first.
      expect(client.events[0]).toMatchObject({ event: 'counts', data: { unread_count: 1, unseen_count: 1 } });
      expect(client.events[0]!.id).toMatch(/^\d+$/);
      const item = await deliverInboxItem(app, acme.tenantId, id, { title: 'live' });
      await client.until((c) => c.ofKind('counts').length >= 2);
      expect(client.events.slice(1)).toEqual([
        { id: expect.stringMatching(/^\d+$/), event: 'notification', data: item },
        { id: expect.stringMatching(/^\d+$/), event: 'counts', data: { unread_count: 2, unseen_count: 2 } },
      ]);
      // The counts are derived by the hub, not stored: they carry the id of the event they follow.
      const ids = client.events.map((e) => BigInt(e.id!));
      expect(ids[1]! > ids[0]! && ids[2] === ids[1]).toBe(true);
      // Marking it read reaches the stream as updated + counts.
      await app.request('PATCH', `/v1/contacts/${id}/notifications/${item.id}`, {
        token: acme.tokenFor(id),
        body: { read: true },
      });
      await client.until((c) => c.ofKind('updated').length === 1 && c.ofKind('counts').length === 3);
      expect(client.ofKind('updated')[0]!.data).toMatchObject({ id: item.id, read_at: expect.any(String) });
      expect(client.ofKind('counts')[2]!.data).toEqual({ unread_count: 1, unseen_count: 1 });
    } finally {
      await client.close();
    }
  });

  it("follows each change with the contact's counts as of then, earlier read and seen items included", async () => {
    const id = await acme.contact('counts-1');
    const token = acme.tokenFor(id);
    const read = await deliverInboxItem(app, acme.tenantId, id, { title: 'read' });
    const seen = await deliverInboxItem(app, acme.tenantId, id, { title: 'seen' });
    const em = app.runtime.orm.em.fork();
    await execute(em, `UPDATE inbox_items SET read_at = now(), seen_at = now() WHERE id = $1`, [read.id]);
    await execute(em, `UPDATE inbox_items SET seen_at = now() WHERE id = $1`, [seen.id]);
    const client = await StreamClient.open(streamUrl(app.url, id), token);
    try {
      await client.until((c) => c.events.length >= 1);
      expect(client.events[0]).toMatchObject({ event: 'counts', data: { unread_count: 1, unseen_count: 0 } });
      for (const title of ['new 1', 'new 2', 'new 3']) await deliverInboxItem(app, acme.tenantId, id, { title });
      await client.until((c) => c.ofKind('notification').length === 3 && c.events.at(-1)!.event === 'counts');
      // However the hub's reads fell, a counts event follows the last item and counts every item stored.
      expect(client.events.at(-1)!.data).toEqual({ unread_count: 4, unseen_count: 3 });
      expect(client.events[1]!.event).toBe('notification');
      // Read-all stores its counts on the stream: they arrive once, not followed by derived ones.
      expect((await app.request('POST', `/v1/contacts/${id}/notifications/read-all`, { token })).status).toBe(200);
      await client.until((c) => c.events.at(-1)!.data.unread_count === 0);
      const after = await deliverInboxItem(app, acme.tenantId, id, { title: 'after read-all' });
      await client.until(
        (c) => c.ofKind('notification').some((e) => e.data.id === after.id) && c.events.at(-1)!.event === 'counts',
      );
      const tail = client.events.slice(
        client.events.findIndex((e) => e.event === 'counts' && e.data.unread_count === 0),
      );
      expect(tail.map((e) => [e.event, e.event === 'counts' ? e.data : e.data.title])).toEqual([
        ['counts', { unread_count: 0, unseen_count: 0 }],
        ['notification', 'after read-all'],
        ['counts', { unread_count: 1, unseen_count: 1 }],
      ]);
    } finally {
      await client.close();
    }
  });

  it("never shows a contact another contact's events", async () => {
    const me = await acme.contact('private-1');
    const other = await acme.contact('private-2');
    const client = await StreamClient.open(streamUrl(app.url, me), acme.tokenFor(me));
    try {
      await client.until((c) => c.events.length >= 1);
      await deliverInboxItem(app, acme.tenantId, other, { title: 'not yours' });
      const mine = await deliverInboxItem(app, acme.tenantId, me, { title: 'yours' });
      await client.until((c) => c.ofKind('notification').length >= 1);
      await client.until((c) => c.ofKind('counts').length >= 2);
      expect(client.ofKind('notification').map((e) => e.data.id)).toEqual([mine.id]);
    } finally {
      await client.close();
    }
  });

  it('replays what was missed after Last-Event-ID, then counts equal to the server', async () => {
    const id = await acme.contact('replay-1');
    const token = acme.tokenFor(id);
    const first = await StreamClient.open(streamUrl(app.url, id), token);
    await first.until((c) => c.events.length >= 1); // the counts on connect
    await deliverInboxItem(app, acme.tenantId, id, { title: 'seen live' });
    await first.until((c) => c.ofKind('notification').length === 1 && c.ofKind('counts').length === 2);
    const lastSeen = first.lastId!;
    await first.close();
    const missed = [
      await deliverInboxItem(app, acme.tenantId, id, { title: 'missed 1' }),
      await deliverInboxItem(app, acme.tenantId, id, { title: 'missed 2' }),
    ];
    const second = await StreamClient.open(streamUrl(app.url, id), token, lastSeen);
    try {
      await second.until((c) => c.events.length >= 3);
      // The missed items, then one counts as of now (counts are not stored per item, so none is replayed).
      expect(second.events.map((e) => e.event)).toEqual(['notification', 'notification', 'counts']);
      expect(second.ofKind('notification').map((e) => e.data.id)).toEqual(missed.map((m) => m.id));
      expect(second.events.every((e) => BigInt(e.id!) > BigInt(lastSeen))).toBe(true);
      const server = await app.request('GET', `/v1/contacts/${id}/notifications`, { token });
      expect(second.events.at(-1)!.data.unread_count).toBe(server.body.unread_count);
      expect(server.body.unread_count).toBe(3);
      // The connect counts carry the id of the last replayed event, so a later reconnect resumes there.
      expect(second.events.at(-1)!.id).toBe(second.events.at(-2)!.id);
    } finally {
      await second.close();
    }
  });

  it('ignores a malformed Last-Event-ID (no replay)', async () => {
    const id = await acme.contact('replay-2');
    await deliverInboxItem(app, acme.tenantId, id);
    const client = await StreamClient.open(streamUrl(app.url, id), acme.tokenFor(id), 'garbage');
    try {
      await client.until((c) => c.events.length >= 1);
      expect(client.events.map((e) => e.event)).toEqual(['counts']);
    } finally {
      await client.close();
    }
  });

  it('clamps a Last-Event-ID beyond the last id ever written (a restored database), so new events still arrive', async () => {
    const id = await acme.contact('replay-3');
    const client = await StreamClient.open(streamUrl(app.url, id), acme.tokenFor(id), '999999999999');
    try {
      await client.until((c) => c.events.length >= 1);
      const item = await deliverInboxItem(app, acme.tenantId, id);
      await client.until((c) => c.ofKind('notification').some((e) => e.data.id === item.id));
    } finally {
      await client.close();
    }
  });

  it('sends a comment heartbeat at the configured interval', async () => {
    const id = await acme.contact('heartbeat-1');
    const client = await StreamClient.open(streamUrl(app.url, id), acme.tokenFor(id));
    try {
      await client.until((c) => c.comments.filter((t) => t === 'heartbeat').length >= 2, 10_000);
    } finally {
      await client.close();
    }
    // The hub forgets a stream once its client has gone.
    await eventually(() => app.runtime.streamHub!.size === 0, { intervalMs: 20 });
  });

  it('keeps delivering after the LISTEN connection is lost: it re-reads from the last id', async () => {
    const id = await acme.contact('reconnect-1');
    const client = await StreamClient.open(streamUrl(app.url, id), acme.tokenFor(id));
    try {
      await client.until((c) => c.events.length >= 1);
      // Kill the hub's LISTEN session on the server side, as a failover or network cut would.
      const { query } = await import('../../../server/base/db/sql.ts');
      const killed = await query(
        app.runtime.orm.em.fork(),
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'herald-stream' AND datname = current_database()`,
      );
      expect(killed).toHaveLength(1);
      const item = await deliverInboxItem(app, acme.tenantId, id, { title: 'during the outage' });
      await client.until((c) => c.ofKind('notification').some((e) => e.data.id === item.id), 10_000);
      expect(app.logs.some((l) => l.includes('stream listener reconnected'))).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('caps open streams per contact (429 with Retry-After), freeing a slot when one closes', async () => {
    const id = await acme.contact('many-tabs');
    const token = acme.tokenFor(id);
    const clients: StreamClient[] = [];
    try {
      for (let i = 0; i < 16; i++) clients.push(await StreamClient.open(streamUrl(app.url, id), token));
      expect(clients.every((c) => c.status === 200)).toBe(true);
      const refused = await app.request('GET', `/v1/contacts/${id}/stream`, { token });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('30');
      await clients.pop()!.close();
      await eventually(() => app.runtime.streamHub!.streamsOf(id) === 15, { intervalMs: 20 });
      clients.push(await StreamClient.open(streamUrl(app.url, id), token));
      expect(clients.at(-1)!.status).toBe(200);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it('ends the stream when the contact token expires', async () => {
    const id = await acme.contact('expiry-1');
    const client = await StreamClient.open(streamUrl(app.url, id), acme.tokenFor(id, 1));
    await client.until((c) => c.ended, 5000);
    expect(client.ended).toBe(true);
  });

  it("answers 404 for another contact's token and across tenants, 401 without token, 403 for a service key, 422 for a bad id", async () => {
    const id = await acme.contact('stream-auth');
    const other = await acme.contact('stream-auth-2');
    const get = (path: string, token?: string) => app.request('GET', path, token ? { token } : {});
    expect((await get(`/v1/contacts/${id}/stream`, acme.tokenFor(other))).status).toBe(404);
    expect((await get(`/v1/contacts/${id}/stream`, globex.tokenFor(id))).status).toBe(404);
    expect((await get(`/v1/contacts/${id}/stream`)).status).toBe(401);
    expect((await get(`/v1/contacts/${id}/stream`, acme.serviceKey)).status).toBe(403);
    expect((await get(`/v1/contacts/zzz/stream`, acme.tokenFor(id))).status).toBe(422);
  });
});

describe('across processes', () => {
  it('a client connected to one process receives what another process delivers, and streams end at shutdown', async () => {
    // Same database and key ring: another Herald process of the same install.
    const second = await startTestApp({
      database: app.database,
      config: { streamHeartbeatMs: 100, encryptionKeys: app.config.encryptionKeys },
    });
    const id = await acme.contact('cross-1');
    const token = acme.tokenFor(id);
    const onFirst = await StreamClient.open(streamUrl(app.url, id), token);
    const onSecond = await StreamClient.open(streamUrl(second.url, id), token);
    try {
      await onFirst.until((c) => c.events.length >= 1);
      await onSecond.until((c) => c.events.length >= 1);
      const item = await deliverInboxItem(second, acme.tenantId, id, { title: 'from the other process' });
      await onFirst.until((c) => c.ofKind('notification').length === 1 && c.ofKind('counts').length === 2);
      expect(onFirst.ofKind('notification')[0]!.data).toEqual(item);
      // A change made through the other process's HTTP API reaches this one too.
      const patched = await second.request('PATCH', `/v1/contacts/${id}/notifications/${item.id}`, {
        token,
        body: { archived: true },
      });
      expect(patched.status).toBe(200);
      await onFirst.until((c) => c.ofKind('updated').length === 1);
      expect(onFirst.ofKind('updated')[0]!.data).toEqual(patched.body);
      // Shutting the second process down ends its streams cleanly; the first keeps going.
      await second.close();
      await onSecond.until((c) => c.ended, 5000);
      const after = await deliverInboxItem(app, acme.tenantId, id, { title: 'after shutdown' });
      await onFirst.until((c) => c.ofKind('notification').some((e) => e.data.id === after.id));
    } finally {
      await onFirst.close();
      await onSecond.close();
      await second.close().catch(() => undefined);
    }
  });
});

describe('stream log appends', () => {
  it("serialise per contact until commit, so a contact's ids become visible in increasing order", async () => {
    const { appendStreamEvent } = await import('../../../server/channels/inbox/events.ts');
    const id = await acme.contact('ordering-1');
    const other = await acme.contact('ordering-2');
    const aMayCommit = signal();
    const aHasAppended = signal();
    let released = false;
    const a = app.runtime.orm.em.fork().transactional(async (tx) => {
      const appended = await appendStreamEvent(tx, {
        tenantId: acme.tenantId,
        contactId: id,
        kind: 'counts',
        payload: { n: 'a' },
      });
      aHasAppended.raise();
      await aMayCommit.raised;
      return appended;
    });
    await aHasAppended.raised;
    // Another contact is not held up.
    await app.runtime.orm.em
      .fork()
      .transactional((tx) =>
        appendStreamEvent(tx, { tenantId: acme.tenantId, contactId: other, kind: 'counts', payload: {} }),
      );
    let bAppendedWhileAOpen = false;
    const b = app.runtime.orm.em.fork().transactional(async (tx) => {
      const appended = await appendStreamEvent(tx, {
        tenantId: acme.tenantId,
        contactId: id,
        kind: 'counts',
        payload: { n: 'b' },
      });
      bAppendedWhileAOpen = !released;
      return appended;
    });
    await untilLockWait(app); // b waits for a's lock: a b that does not wait ends this test by the timeout
    released = true;
    aMayCommit.raise();
    const [idA, idB] = await Promise.all([a, b]);
    // B waited for A's commit before drawing its id.
    expect(bAppendedWhileAOpen).toBe(false);
    expect(BigInt(idB) > BigInt(idA)).toBe(true);
  });
});

describe('stream notices', () => {
  it('name the contacts of a transaction, at most 100 per notice, each once', async () => {
    const pg = (await import('pg')).default;
    const { queryOne } = await import('../../../server/base/db/sql.ts');
    const { STREAM_CHANNEL, streamNoticesSql } = await import('../../../server/channels/inbox/events.ts');
    const listener = new pg.Client({ connectionString: app.runtime.db.url });
    await listener.connect();
    const notices: string[][] = [];
    listener.on('notification', (m) => {
      if (m.channel === STREAM_CHANNEL) notices.push((JSON.parse(m.payload!) as { contacts: string[] }).contacts);
    });
    try {
      await listener.query(`LISTEN ${STREAM_CHANNEL}`);
      const contacts: string[] = Array.from({ length: 250 }, () => crypto.randomUUID());
      // Every contact twice, as a batch delivering two items to each would name it.
      const sent = await queryOne<{ notices: number }>(
        app.runtime.orm.em.fork(),
        `SELECT ${streamNoticesSql('SELECT unnest($1::uuid[]) AS contact_id')} AS notices`,
        [[...contacts, ...contacts]],
      );
      expect(sent!.notices).toBe(3);
      const ours = await eventually(
        () => {
          const arrived = notices.filter((n) => n.some((c) => contacts.includes(c)));
          expect(arrived.map((n) => n.length).sort((a, b) => a - b)).toEqual([50, 100, 100]);
          return arrived;
        },
        { timeoutMs: 5000, intervalMs: 20 },
      );
      expect(ours.flat().sort()).toEqual([...contacts].sort());
    } finally {
      await listener.end();
    }
  });
});

describe('stream log retention', () => {
  it('a daily pg-boss schedule prunes stream events older than 7 days; older items are not replayed', async () => {
    const { query } = await import('../../../server/base/db/sql.ts');
    const { streamPrune } = await import('../../../server/jobs/stream-prune.ts');
    const { readStreamLog } = await import('../../../server/channels/inbox/log.ts');
    const em = app.runtime.orm.em.fork();
    const schedules = await query<{ name: string; cron: string }>(
      em,
      `SELECT name, cron FROM pgboss.schedule WHERE name = $1`,
      [streamPrune.name],
    );
    expect(schedules).toEqual([{ name: 'stream-events-prune', cron: streamPrune.schedule }]);
    const id = await acme.contact('retention-1');
    const old = await deliverInboxItem(app, acme.tenantId, id, { title: 'old' });
    const marked = await app.request('PATCH', `/v1/contacts/${id}/notifications/${old.id}`, {
      token: acme.tokenFor(id),
      body: { read: true },
    });
    expect(marked.status).toBe(200);
    await query(em, `UPDATE stream_events SET created_at = now() - interval '8 days' WHERE contact_id = $1`, [id]);
    await query(em, `UPDATE inbox_items SET created_at = now() - interval '8 days' WHERE contact_id = $1`, [id]);
    await deliverInboxItem(app, acme.tenantId, id, { title: 'recent' });
    // Run the job as its schedule would: through the queue, handled by this process's worker.
    await app.runtime.boss!.send(streamPrune.name, {});
    const storedRows = () => query(em, `SELECT 1 FROM stream_events WHERE contact_id = $1`, [id]);
    await eventually(async () => expect(await storedRows()).toEqual([]), { intervalMs: 100 });
    const left = await readStreamLog(em, id, 0n, 100);
    expect(left.map((r) => [r.kind, r.payload.title])).toEqual([['notification', 'recent']]);
  });

  it('replays an item stored before items had stream ids from its stored copy, once', async () => {
    const { execute, query } = await import('../../../server/base/db/sql.ts');
    const { appendStreamEvent } = await import('../../../server/channels/inbox/events.ts');
    const { readStreamLog } = await import('../../../server/channels/inbox/log.ts');
    const em = app.runtime.orm.em.fork();
    const id = await acme.contact('legacy-1');
    const item = await deliverInboxItem(app, acme.tenantId, id, { title: 'legacy' });
    // An item without a stream id, a 'notification' row holding its copy.
    await execute(em, `UPDATE inbox_items SET stream_id = NULL WHERE id = $1`, [item.id]);
    await appendStreamEvent(em, { tenantId: acme.tenantId, contactId: id, kind: 'notification', payload: { ...item } });
    await deliverInboxItem(app, acme.tenantId, id, { title: 'new' });
    const log = await readStreamLog(em, id, 0n, 100);
    expect(log.map((r) => [r.kind, r.payload.title])).toEqual([
      ['notification', 'legacy'],
      ['notification', 'new'],
    ]);
    expect(log[0]!.payload).toEqual(item);
    expect(Number(log[0]!.id)).toBeLessThan(Number(log[1]!.id));
    expect(await query(em, `SELECT 1 FROM stream_events WHERE contact_id = $1`, [id])).toHaveLength(1);
  });
});

// POST /v1/contacts/import: NDJSON streamed from the request body, batched upserts by external_id,
// refused lines reported by number (the first 100) while the good lines are kept, and the limits.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { addUser, createTenantFixture, sql, sqlOne, type TenantFixture } from '../support/fixtures.ts';
import { importContacts, numberedLines } from '../../server/resources/contact-import.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;

beforeAll(async () => {
  app = await startTestApp();
  [acme, globex] = await Promise.all([createTenantFixture(app, 'Acme'), createTenantFixture(app, 'Globex')]);
});
afterAll(async () => {
  await app?.close();
});

const NDJSON = { 'content-type': 'application/x-ndjson' };

function importText(fx: TenantFixture, text: string, headers: Record<string, string> = NDJSON) {
  return app.request('POST', '/v1/contacts/import', { token: fx.serviceKey, rawBody: text, headers });
}

/** Sends the body as a stream of the given chunks (Transfer-Encoding: chunked, no Content-Length). */
async function importChunks(fx: TenantFixture, chunks: Uint8Array[]) {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  const response = await fetch(`${app.url}/v1/contacts/import`, {
    method: 'POST',
    headers: { ...NDJSON, authorization: `Bearer ${fx.serviceKey}` },
    body,
    duplex: 'half',
  } as RequestInit);
  return { status: response.status, body: await response.json() };
}

const lines = (...entries: unknown[]) => entries.map((e) => (typeof e === 'string' ? e : JSON.stringify(e))).join('\n');

describe('POST /v1/contacts/import', () => {
  it('creates and updates contacts; a field left out keeps its value; blank lines are skipped', async () => {
    await acme.contact('imp-old', { email: 'old@example.test', name: 'Old' });
    const res = await importText(
      acme,
      lines(
        { external_id: 'imp-a', email: 'A@Example.test', name: 'A' },
        '',
        { external_id: 'imp-old', language: 'de' },
        '  ',
        { external_id: 'imp-b' },
      ) + '\n',
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ created: 2, updated: 1, refused: 0, errors: [] });
    const rows = await sql(
      app,
      `SELECT external_id, email, name, language FROM contacts WHERE tenant_id = $1 AND external_id LIKE 'imp-%' ORDER BY external_id`,
      [acme.tenantId],
    );
    expect(rows).toEqual([
      { external_id: 'imp-a', email: 'a@example.test', name: 'A', language: null },
      { external_id: 'imp-b', email: null, name: null, language: null },
      { external_id: 'imp-old', email: 'old@example.test', name: 'Old', language: 'de' },
    ]);
  });

  it('refuses a line nesting its properties deeper than 32 levels, naming where, and keeps the others', async () => {
    const deep = `{"external_id":"deep","properties":${'{"a":'.repeat(4400)}1${'}'.repeat(4400)}}`;
    const res = await importText(acme, `${deep}\n${JSON.stringify({ external_id: 'beside-deep' })}\n`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ created: 1, refused: 1 });
    expect(res.body.errors).toEqual([
      { line: 1, detail: `properties.${Array(31).fill('a').join('.')}: nested deeper than 32 levels` },
    ]);
  });

  it('reports malformed lines by line number and keeps the good ones', async () => {
    const text = lines(
      { external_id: 'good-1' },
      '{"external_id": "broken"', // 2: malformed JSON
      { external_id: 'bad-email', email: 'nope' }, // 3
      { email: 'no-id@example.test' }, // 4: no external_id
      '[1, 2]', // 5: not an object
      { external_id: 'nul\u0000' }, // 6: unstorable
      { external_id: 'good-2', language: 'pt-br' }, // 7
      '"just a string"', // 8
      { external_id: 'good-3' }, // 9, with CRLF endings below
    ).replaceAll('\n', '\r\n');
    const res = await importText(acme, text);
    expect(res.status).toBe(200);
    expect(res.body.created).toBe(3);
    expect(res.body.refused).toBe(6);
    expect(res.body.errors.map((e: { line: number }) => e.line)).toEqual([2, 3, 4, 5, 6, 8]);
    expect(res.body.errors[0].detail).toMatch(/malformed JSON/);
    expect(res.body.errors[1].detail).toMatch(/^email: /);
    expect(res.body.errors[2].detail).toMatch(/^external_id: /);
    const kept = await sql<{ external_id: string; language: string | null }>(
      app,
      `SELECT external_id, language FROM contacts WHERE tenant_id = $1 AND external_id LIKE 'good-%' ORDER BY external_id`,
      [acme.tenantId],
    );
    expect(kept).toEqual([
      { external_id: 'good-1', language: null },
      { external_id: 'good-2', language: 'pt-BR' },
      { external_id: 'good-3', language: null },
    ]);
  });

  it('lists the first 100 errors and counts them all; a line over 64 KiB is refused unread', async () => {
    const bad = Array.from({ length: 150 }, () => 'not json');
    const res = await importText(
      acme,
      lines(...bad, { external_id: 'x'.repeat(70_000) }, { external_id: 'after-many-errors' }),
    );
    expect(res.status).toBe(200);
    expect(res.body.refused).toBe(151);
    expect(res.body.errors).toHaveLength(100);
    expect(res.body.errors[99].line).toBe(100);
    expect(res.body.created).toBe(1);
  });

  it('writes many lines in batches, streamed in chunks cut anywhere (inside a UTF-8 character too)', async () => {
    const count = 12_345;
    const text = Array.from({ length: count }, (_, i) =>
      JSON.stringify({ external_id: `bulk-${i}`, name: `Zoë ${i} 日本` }),
    ).join('\n');
    const bytes = Buffer.from(text, 'utf8');
    const chunks: Uint8Array[] = [];
    for (let at = 0; at < bytes.length;) {
      const size = 1 + Math.floor(Math.random() * 9000);
      chunks.push(bytes.subarray(at, at + size));
      at += size;
    }
    const res = await importChunks(acme, chunks);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ created: count, updated: 0, refused: 0, errors: [] });
    const stored = await sqlOne<{ n: number; bad: number }>(
      app,
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE name <> 'Zoë ' || substr(external_id, 6) || ' 日本')::int AS bad FROM contacts WHERE tenant_id = $1 AND external_id LIKE 'bulk-%'`,
      [acme.tenantId],
    );
    expect(stored).toEqual({ n: count, bad: 0 });
    // Again: all updates (the same external ids twice in one body count once).
    const again = await importText(
      acme,
      text + '\n' + JSON.stringify({ external_id: 'bulk-0', email: 'z@example.test' }),
    );
    expect(again.body).toMatchObject({ created: 0, refused: 0 });
    expect(again.body.updated).toBeGreaterThanOrEqual(count);
  });

  it('answers 200 with nothing done for an empty body, 415 for another media type', async () => {
    expect((await importText(acme, '')).body).toEqual({ created: 0, updated: 0, refused: 0, errors: [] });
    const json = await importText(acme, '{"external_id": "x"}', { 'content-type': 'application/json' });
    expect(json.status).toBe(415);
    expect(json.body.code).toBe('unsupported_media_type');
    const none = await app.request('POST', '/v1/contacts/import', { token: acme.serviceKey });
    expect(none.status).toBe(415);
  });

  it('answers 413 before reading a body declared larger than 100 MB', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${app.url}/v1/contacts/import`, {
        method: 'POST',
        headers: { ...NDJSON, authorization: `Bearer ${acme.serviceKey}`, 'content-length': String(200 * 1024 * 1024) },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode!);
        req.destroy();
      });
      req.on('error', reject);
      req.write('{"external_id": "never"}\n');
    });
    expect(status).toBe(413);
    expect(await sqlOne(app, `SELECT count(*)::int AS n FROM contacts WHERE external_id = 'never'`)).toEqual({ n: 0 });
  });

  it('stops with 413 once a streamed body passes the limit, keeping the batches written before', async () => {
    const em = app.runtime.orm.em.fork();
    const text = Array.from({ length: 6000 }, (_, i) => JSON.stringify({ external_id: `limit-${i}` })).join('\n');
    const body = Buffer.from(text);
    const chunks = [body.subarray(0, body.length - 1000), body.subarray(body.length - 1000)];
    await expect(importContacts(em, acme.tenantId, chunks, body.length - 500)).rejects.toMatchObject({ status: 413 });
    // The first batch of 5,000 was written before the limit was passed.
    expect(
      await sqlOne(app, `SELECT count(*)::int AS n FROM contacts WHERE tenant_id = $1 AND external_id LIKE 'limit-%'`, [
        acme.tenantId,
      ]),
    ).toEqual({ n: 5000 });
  });

  it('numbers lines across chunks and ends with an unterminated last line', async () => {
    const seen: Array<{ number: number; text: string | null }> = [];
    for await (const line of numberedLines([Buffer.from('a\nb'), Buffer.from('c\n\nd')], 1000)) seen.push(line);
    expect(seen).toEqual([
      { number: 1, text: 'a' },
      { number: 2, text: 'bc' },
      { number: 3, text: '' },
      { number: 4, text: 'd' },
    ]);
  });

  it("shares the bulk route's budget of 20 calls a minute per tenant (429 past it)", async () => {
    const tenant = await createTenantFixture(app, 'Busy');
    for (let i = 0; i < 19; i++) expect((await importText(tenant, '')).status).toBe(200);
    expect(
      (
        await app.request('POST', '/v1/contacts/bulk', {
          token: tenant.serviceKey,
          body: { contacts: [{ external_id: 'b' }] },
        })
      ).status,
    ).toBe(200);
    const refused = await importText(tenant, '{"external_id": "late"}');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBeTruthy();
  });

  it('takes a service key only (401 without one, 403 for a contact token or a console admin) and writes into its own tenant', async () => {
    const body = lines({ external_id: 'tenant-check', name: 'Acme one' });
    expect((await app.request('POST', '/v1/contacts/import', { rawBody: body, headers: NDJSON })).status).toBe(401);
    const contact = await app.request('POST', '/v1/contacts/import', {
      rawBody: body,
      headers: NDJSON,
      token: acme.contactToken,
    });
    expect(contact.status).toBe(403);
    const admin = (await addUser(app, acme.tenantId, 'admin', true)).token;
    expect(
      (await app.request('POST', '/v1/contacts/import', { rawBody: body, headers: NDJSON, token: admin })).status,
    ).toBe(403);
    await globex.contact('tenant-check', { name: 'Globex one' });
    expect((await importText(acme, body)).body).toMatchObject({ created: 1, updated: 0 });
    expect(
      await sql(app, `SELECT tenant_id, name FROM contacts WHERE external_id = 'tenant-check' ORDER BY name`),
    ).toEqual([
      { tenant_id: acme.tenantId, name: 'Acme one' },
      { tenant_id: globex.tenantId, name: 'Globex one' },
    ]);
  });
});

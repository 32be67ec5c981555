// Data requests: an owner files an export (a JSON file in <dataDir>/exports, mode 0600, without secrets,
// downloadable through the API) or a deletion (the tenant's data removed, the request row kept as the
// record). Owner only; 503 when the queue cannot take the request.
import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/eventually.ts';
import { addUser, requestAs, signUp, type SignedUp } from '../support/fixtures.ts';
import { query, queryOne } from '../../server/base/db/sql.ts';
import { hashServiceKey } from '../../server/base/auth/credentials.ts';

let app: TestApp;
let owner: SignedUp;
const NO_SUCH_TENANT = '0190f5e2-0000-7000-8000-000000000000';

beforeAll(async () => {
  app = await startTestApp({ config: { trustedProxies: ['127.0.0.1'] } });
  owner = await signUp(app, { tenantName: 'Exporter' });
});
afterAll(async () => {
  await app?.close();
});

const path = (tenantId: string) => `/v1/auth/tenants/${tenantId}/data-requests`;
const file = (tenantId: string, token: string, kind: string) =>
  requestAs(app, 'POST', path(tenantId), { token, body: { kind } });

async function waitDone(tenantId: string, token: string, id: string) {
  return eventually(
    async () => {
      const res = await app.request('GET', `${path(tenantId)}/${id}`, { token });
      return res.status === 200 && (res.body.status === 'completed' || res.body.status === 'failed') && res.body;
    },
    { message: 'data request did not finish' },
  );
}

describe('POST /v1/auth/tenants/{tenant_id}/data-requests (export)', () => {
  it('files an export (202) that completes with a downloadable file holding the data but no secrets', async () => {
    const em = app.runtime.orm.em.fork();
    await query(
      em,
      `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash) VALUES (gen_random_uuid(), $1, 'ci', 'sk_live', $2)`,
      [owner.tenantId, hashServiceKey('sk_secret_export_key')],
    );
    await query(
      em,
      `INSERT INTO email_transports (tenant_id, host, port, username, password_ciphertext, from_email) VALUES ($1, 'smtp.example.test', 587, 'mailer', $2, 'a@example.test')`,
      [
        owner.tenantId,
        app.runtime.keyRing.encrypt('smtp-password-secret', `email_transports/${owner.tenantId}/password`),
      ],
    );
    const contact = await queryOne<{ id: string }>(
      em,
      `INSERT INTO contacts (id, tenant_id, external_id) VALUES (gen_random_uuid(), $1, 'exported-user') RETURNING id`,
      [owner.tenantId],
    );
    await query(
      em,
      `INSERT INTO push_subscriptions (id, tenant_id, contact_id, provider, token, destination_hash) VALUES (gen_random_uuid(), $1, $2, 'fcm', 'fcm-device-token', 'hash-of-the-destination')`,
      [owner.tenantId, contact!.id],
    );
    const res = await file(owner.tenantId, owner.token, 'export');
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      id: expect.any(String),
      kind: 'export',
      status: 'queued',
      created_at: expect.any(String),
      completed_at: null,
      download_url: null,
      error: null,
    });
    const done = await waitDone(owner.tenantId, owner.token, res.body.id);
    expect(done).toMatchObject({
      status: 'completed',
      completed_at: expect.any(String),
      download_url: `${path(owner.tenantId)}/${res.body.id}/download`,
    });

    const row = await queryOne<{ file_path: string }>(em, `SELECT file_path FROM data_requests WHERE id = $1`, [
      res.body.id,
    ]);
    expect(row!.file_path.startsWith(`${app.dataDir}/exports/`)).toBe(true);
    expect(statSync(row!.file_path).mode & 0o777).toBe(0o600);

    const download = await app.request('GET', done.download_url, { token: owner.token });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-disposition')).toContain('attachment');
    const doc = download.body;
    expect(doc.tenant).toMatchObject({ id: owner.tenantId, name: 'Exporter' });
    expect(doc.members).toEqual([
      expect.objectContaining({ user_id: owner.userId, email: owner.email, role: 'owner' }),
    ]);
    expect(doc.tables.brands).toEqual([expect.objectContaining({ key: 'default' })]);
    expect(doc.tables.api_keys).toEqual([expect.objectContaining({ name: 'ci', prefix: 'sk_live' })]);
    expect(doc.tables.api_keys[0]).not.toHaveProperty('key_hash');
    expect(doc.tables.email_transports[0]).toMatchObject({ host: 'smtp.example.test', username: 'mailer' });
    expect(doc.tables.email_transports[0]).not.toHaveProperty('password_ciphertext');
    expect(download.text).not.toContain('smtp-password-secret');
    expect(download.text).not.toContain('password_hash');
    // Every *_hash column is left out, as docs/tenants-and-console.md says.
    expect(doc.tables.push_subscriptions).toEqual([
      expect.objectContaining({ provider: 'fcm', token: 'fcm-device-token' }),
    ]);
    expect(download.text).not.toContain('hash-of-the-destination');
    const columns = Object.values(doc.tables as Record<string, Array<Record<string, unknown>>>).flatMap((rows) =>
      rows.flatMap((r) => Object.keys(r)),
    );
    expect(columns.filter((c) => c.endsWith('_hash'))).toEqual([]);
  });

  it('answers 403 for an admin (not owner) and a stranger, 404 for no such tenant, 401 without a credential, 422 for a bad kind', async () => {
    const admin = await addUser(app, owner.tenantId, 'admin');
    const stranger = await signUp(app);
    const asAdmin = await file(owner.tenantId, admin.token, 'export');
    expect(asAdmin.status).toBe(403);
    expect(asAdmin.body.code).toBe('insufficient_role');
    expect((await file(owner.tenantId, stranger.token, 'export')).status).toBe(403);
    expect((await file(NO_SUCH_TENANT, owner.token, 'export')).status).toBe(404);
    expect((await requestAs(app, 'POST', path(owner.tenantId), { body: { kind: 'export' } })).status).toBe(401);
    const bad = await file(owner.tenantId, owner.token, 'everything');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'kind']);
  });

  it('answers 503 data_request_unavailable when the queue is unavailable, and files nothing', async () => {
    const boss = app.runtime.boss;
    const before = await query(app.runtime.orm.em.fork(), `SELECT id FROM data_requests WHERE tenant_id = $1`, [
      owner.tenantId,
    ]);
    app.runtime.boss = null;
    try {
      const res = await file(owner.tenantId, owner.token, 'export');
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('data_request_unavailable');
    } finally {
      app.runtime.boss = boss;
    }
    // a queue that fails to take the job rolls the request back too
    const failing = Object.create(boss!) as NonNullable<typeof boss>;
    failing.send = (() => Promise.reject(new Error('queue down'))) as never;
    app.runtime.boss = failing;
    try {
      expect((await file(owner.tenantId, owner.token, 'delete')).status).toBe(503);
    } finally {
      app.runtime.boss = boss;
    }
    const after = await query(app.runtime.orm.em.fork(), `SELECT id FROM data_requests WHERE tenant_id = $1`, [
      owner.tenantId,
    ]);
    expect(after).toHaveLength(before.length);
  });
});

describe('GET /v1/auth/tenants/{tenant_id}/data-requests/{id} and /download', () => {
  it("answers 404 for another tenant's request, 403 for an admin, 401 without a credential, 422 for a malformed id", async () => {
    const other = await signUp(app);
    const mine = await file(owner.tenantId, owner.token, 'export');
    await waitDone(owner.tenantId, owner.token, mine.body.id);
    expect((await app.request('GET', `${path(other.tenantId)}/${mine.body.id}`, { token: other.token })).status).toBe(
      404,
    );
    expect(
      (await app.request('GET', `${path(other.tenantId)}/${mine.body.id}/download`, { token: other.token })).status,
    ).toBe(404);
    const admin = await addUser(app, owner.tenantId, 'admin');
    expect((await app.request('GET', `${path(owner.tenantId)}/${mine.body.id}`, { token: admin.token })).status).toBe(
      403,
    );
    expect(
      (await app.request('GET', `${path(owner.tenantId)}/${mine.body.id}/download`, { token: admin.token })).status,
    ).toBe(403);
    expect((await app.request('GET', `${path(owner.tenantId)}/${mine.body.id}`)).status).toBe(401);
    expect((await app.request('GET', `${path(owner.tenantId)}/nope`, { token: owner.token })).status).toBe(422);
    expect((await app.request('GET', `${path(owner.tenantId)}/nope/download`, { token: owner.token })).status).toBe(
      422,
    );
    expect((await app.request('GET', `${path(owner.tenantId)}/${mine.body.id}/download`)).status).toBe(401);
    const unknown = '00000000-0000-7000-8000-000000000000';
    expect((await app.request('GET', `${path(owner.tenantId)}/${unknown}`, { token: owner.token })).status).toBe(404);
    expect(
      (await app.request('GET', `${path(owner.tenantId)}/${unknown}/download`, { token: owner.token })).status,
    ).toBe(404);
  });
});

describe('POST /v1/auth/tenants/{tenant_id}/data-requests (delete)', () => {
  it("removes the tenant's data and export files; the request row survives as the record; members get a new default", async () => {
    const victim = await signUp(app, { tenantName: 'Doomed' });
    const second = await app.request('POST', '/v1/auth/tenants', { token: victim.token, body: { name: 'Survivor' } });
    const exp = await file(victim.tenantId, victim.token, 'export');
    await waitDone(victim.tenantId, victim.token, exp.body.id);
    const exportPath = (await queryOne<{ file_path: string }>(
      app.runtime.orm.em.fork(),
      `SELECT file_path FROM data_requests WHERE id = $1`,
      [exp.body.id],
    ))!.file_path;

    const res = await file(victim.tenantId, victim.token, 'delete');
    expect(res.status).toBe(202);
    expect(res.body.kind).toBe('delete');
    const em = app.runtime.orm.em.fork();
    await eventually(async () =>
      expect(
        (await queryOne<{ status: string }>(em, `SELECT status FROM data_requests WHERE id = $1`, [res.body.id]))
          ?.status,
      ).toBe('completed'),
    );
    expect(await queryOne(em, `SELECT 1 FROM tenants WHERE id = $1`, [victim.tenantId])).toBeUndefined();
    expect(await queryOne(em, `SELECT 1 FROM brands WHERE tenant_id = $1`, [victim.tenantId])).toBeUndefined();
    expect(() => statSync(exportPath)).toThrow();
    const memberships = await query(em, `SELECT tenant_id, is_default FROM memberships WHERE user_id = $1`, [
      victim.userId,
    ]);
    expect(memberships).toEqual([{ tenant_id: second.body.id, is_default: true }]);
    expect((await app.request('GET', `${path(victim.tenantId)}/${res.body.id}`, { token: victim.token })).status).toBe(
      404,
    );
  });
});

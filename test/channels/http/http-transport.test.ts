// The http channel's transport routes: PUT/GET/DELETE /v1/http-transport, POST .../rotate-secret and
// .../test, over real HTTP against a real receiver that verifies Standard Webhooks signatures. The
// signing secret is in the answer that creates or rotates it and nowhere else (GET, the configuration
// export, the audit log, the database in clear); header values are never answered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import {
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  sqlOne,
  type TenantFixture,
} from '../../support/fixtures.ts';
import {
  startHttpGatewayPeer,
  verifyStandardWebhook,
  type HttpGatewayPeer,
} from '../../support/provider-peers/index.ts';

const HEADER_SECRET = 'Bearer hdr-9d0c1f7e2b';

let app: TestApp;
let strict: TestApp;
let peer: HttpGatewayPeer;
let a: TenantFixture;
let b: TenantFixture;

beforeAll(async () => {
  peer = await startHttpGatewayPeer();
  app = await startTestApp({ config: { allowPrivateWebhookUrls: true } });
  strict = await startTestApp({ config: { allowPrivateWebhookUrls: false } });
  a = await createTenantFixture(app, 'Acme');
  b = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  await Promise.all([app?.close(), strict?.close()]);
  await peer?.close();
});

describe('PUT /v1/http-transport', () => {
  let secret: string;

  it('creates the transport and shows the generated whsec_ secret once', async () => {
    const res = await app.request('PUT', '/v1/http-transport', {
      token: a.serviceKey,
      body: { url: `${peer.url}/hooks/acme`, headers: { Authorization: HEADER_SECRET, 'X-Team': 'ops' } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      url: `${peer.url}/hooks/acme`,
      header_names: ['Authorization', 'X-Team'],
      include_secret_variables: false,
      credentials_unreadable: false,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(res.text).not.toContain(HEADER_SECRET);
    secret = res.body.secret;
    const row = await sqlOne<{ headers_ciphertext: string; secret_ciphertext: string }>(
      app,
      `SELECT headers_ciphertext, secret_ciphertext FROM http_transports WHERE tenant_id = $1`,
      [a.tenantId],
    );
    expect(row!.headers_ciphertext).not.toContain('hdr-9d0c1f7e2b');
    expect(row!.secret_ciphertext).not.toContain(secret.slice(6));
  });

  it('keeps the secret (and the stored headers) on a later PUT, without showing it', async () => {
    const res = await app.request('PUT', '/v1/http-transport', {
      token: a.ownerToken,
      body: { url: `${peer.url}/hooks/acme-v2`, include_secret_variables: true },
    });
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty('secret');
    expect(res.body).toMatchObject({
      url: `${peer.url}/hooks/acme-v2`,
      header_names: ['Authorization', 'X-Team'],
      include_secret_variables: true,
    });
    const test = await app.request('POST', '/v1/http-transport/test', { token: a.serviceKey });
    expect(test.body).toMatchObject({ ok: true, status: 200 });
    const received = peer.received.at(-1)!;
    expect(received.path).toBe('/hooks/acme-v2');
    expect(received.headers.authorization).toBe(HEADER_SECRET);
    expect(() => verifyStandardWebhook(secret, received)).not.toThrow();
  });

  it('refuses to carry the stored headers to another origin unless they are given again', async () => {
    const res = await app.request('PUT', '/v1/http-transport', {
      token: a.serviceKey,
      body: { url: 'http://127.0.0.2:9/elsewhere' },
    });
    expectValidationError(res, ['body', 'headers']);
    const moved = await app.request('PUT', '/v1/http-transport', {
      token: a.serviceKey,
      body: { url: 'http://127.0.0.2:9/elsewhere', headers: {} },
    });
    expect(moved.status).toBe(200);
    expect(moved.body.header_names).toEqual([]);
    const back = await app.request('PUT', '/v1/http-transport', {
      token: a.serviceKey,
      body: { url: `${peer.url}/hooks/acme`, headers: { Authorization: HEADER_SECRET } },
    });
    expect(back.status).toBe(200);
    expect(back.body).not.toHaveProperty('secret');
  });

  it('answers 422 HTTPValidationError on malformed input, never 500', async () => {
    const cases: Array<[unknown, Array<string | number>]> = [
      [{}, ['body', 'url']],
      [{ url: 'not a url' }, ['body', 'url']],
      [{ url: 'ftp://example.com/x' }, ['body', 'url']],
      [{ url: 'https://user:secret@example.com/x' }, ['body', 'url']],
      [{ url: 42 }, ['body', 'url']],
      [{ url: 'https://example.com', headers: { 'Bad Name': 'x' } }, ['body', 'headers', 'Bad Name']],
      [{ url: 'https://example.com', headers: { 'X-A': 'line\r\nInjected: 1' } }, ['body', 'headers', 'X-A']],
      [
        { url: 'https://example.com', headers: { 'Webhook-Signature': 'v1,x' } },
        ['body', 'headers', 'Webhook-Signature'],
      ],
      [{ url: 'https://example.com', headers: { 'X-A': 1 } }, ['body', 'headers', 'X-A']],
      [{ url: 'https://example.com', headers: { 'x-a': '1', 'X-A': '2' } }, ['body', 'headers']],
      [{ url: 'https://example.com', include_secret_variables: 'yes' }, ['body', 'include_secret_variables']],
    ];
    for (const [body, loc] of cases) {
      const res = await app.request('PUT', '/v1/http-transport', { token: b.serviceKey, body });
      expectValidationError(res, loc);
    }
    const raw = await app.request('PUT', '/v1/http-transport', { token: b.serviceKey, rawBody: '{"url":' });
    expect(raw.status).toBe(422);
    expect((await app.request('GET', '/v1/http-transport', { token: b.serviceKey })).status).toBe(404);
  });

  it('refuses private and plain-http URLs unless allowPrivateWebhookUrls is set', async () => {
    const s = await createTenantFixture(strict, 'Strict');
    for (const url of [
      'https://127.0.0.1/hook',
      'https://localhost/hook',
      'https://10.1.2.3/hook',
      'https://[::1]/h',
    ]) {
      const res = await strict.request('PUT', '/v1/http-transport', { token: s.serviceKey, body: { url } });
      expectValidationError(res, ['body', 'url']);
      expect(res.body.detail[0].msg).toContain('allowPrivateWebhookUrls');
    }
    const plain = await strict.request('PUT', '/v1/http-transport', {
      token: s.serviceKey,
      body: { url: 'http://93.184.215.14/hook' },
    });
    expectValidationError(plain, ['body', 'url']);
    expect(plain.body.detail[0].msg).toContain('https');
    const ok = await strict.request('PUT', '/v1/http-transport', {
      token: s.serviceKey,
      body: { url: 'https://93.184.215.14/hook' },
    });
    expect(ok.status).toBe(200);
    // The lax install takes the loopback peer over plain http (the earlier tests).
  });

  it('answers 401 without a credential and 403 to a contact token or an outsider', async () => {
    await expectManagementOnly(app, a, 'PUT', '/v1/http-transport', { url: 'https://example.com' });
  });
});

describe('GET /v1/http-transport', () => {
  it('answers the URL and header names, never the secret or header values', async () => {
    const res = await app.request('GET', '/v1/http-transport', { token: a.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      url: `${peer.url}/hooks/acme`,
      header_names: ['Authorization'],
      include_secret_variables: false,
      credentials_unreadable: false,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(res.text).not.toContain('whsec_');
    expect(res.text).not.toContain(HEADER_SECRET);
  });

  it("answers 404 for a tenant without one (never another tenant's)", async () => {
    const res = await app.request('GET', '/v1/http-transport', { token: b.serviceKey });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  it('answers 401/403 as a management route', async () => {
    await expectManagementOnly(app, a, 'GET', '/v1/http-transport');
  });
});

describe('POST /v1/http-transport/rotate-secret', () => {
  it('replaces the secret at once and shows the new one this once', async () => {
    const res = await app.request('POST', '/v1/http-transport/rotate-secret', { token: a.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body.secret).toMatch(/^whsec_/);
    const rotated = res.body.secret as string;
    await app.request('POST', '/v1/http-transport/test', { token: a.serviceKey });
    const received = peer.received.at(-1)!;
    expect(() => verifyStandardWebhook(rotated, received)).not.toThrow();
    const again = await app.request('GET', '/v1/http-transport', { token: a.serviceKey });
    expect(again.text).not.toContain(rotated);
  });

  it('answers 404 for a tenant without a transport', async () => {
    const res = await app.request('POST', '/v1/http-transport/rotate-secret', { token: b.serviceKey });
    expect(res.status).toBe(404);
  });

  it('answers 401/403 as a management route', async () => {
    await expectManagementOnly(app, a, 'POST', '/v1/http-transport/rotate-secret');
  });
});

describe('POST /v1/http-transport/test', () => {
  it('sends one signed POST with the sample body and reports the status and the answer id', async () => {
    const secret = (await app.request('POST', '/v1/http-transport/rotate-secret', { token: a.serviceKey })).body
      .secret as string;
    peer.respondWith({ status: 202, body: { id: 'msg_77' } });
    const before = peer.received.length;
    const res = await app.request('POST', '/v1/http-transport/test', { token: a.serviceKey });
    peer.respondWith({ status: 200, body: { ok: true } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, status: 202, message_id: 'msg_77' });
    expect(peer.received).toHaveLength(before + 1);
    const received = peer.received.at(-1)!;
    expect(received.method).toBe('POST');
    expect(received.headers['content-type']).toBe('application/json');
    expect(verifyStandardWebhook(secret, received)).toMatchObject({
      event_id: received.headers['webhook-id'],
      type: 'herald.test',
      contact: { external_id: 'herald_test' },
      rendered: { title: 'Herald test' },
    });
  });

  it("reports the endpoint's refusal", async () => {
    peer.failNext(1, { status: 403, body: { error: 'forbidden' } });
    const res = await app.request('POST', '/v1/http-transport/test', { token: a.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: false, status: 403, error: 'HTTP 403 forbidden' });
  });

  it('reports an endpoint that does not answer', async () => {
    await peer.down();
    try {
      const res = await app.request('POST', '/v1/http-transport/test', { token: a.serviceKey });
      expect(res.body).toMatchObject({ ok: false, status: null, error: expect.any(String) });
    } finally {
      await peer.up();
    }
  });

  it('answers 404 for a tenant without a transport', async () => {
    const res = await app.request('POST', '/v1/http-transport/test', { token: b.serviceKey });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
  });

  it('answers 401/403 as a management route', async () => {
    await expectManagementOnly(app, a, 'POST', '/v1/http-transport/test');
  });
});

describe('the secret is shown once and never again', () => {
  it('is neither in the configuration export nor in the audit log, nor are header values', async () => {
    const t = await createTenantFixture(app, 'Initech');
    const created = await app.request('PUT', '/v1/http-transport', {
      token: t.ownerToken,
      body: { url: `${peer.url}/hooks/initech`, headers: { 'X-Api-Key': 'hdr-key-55aa' } },
    });
    const secret = created.body.secret as string;
    const rotated = (await app.request('POST', '/v1/http-transport/rotate-secret', { token: t.ownerToken })).body
      .secret as string;
    const exported = await app.request('GET', '/v1/configuration', { token: t.serviceKey });
    expect(exported.status).toBe(200);
    const audit = await app.request('GET', '/v1/audit-log', { token: t.ownerToken });
    expect(audit.status).toBe(200);
    const actions = audit.body.items.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['http_transport.update', 'http_transport.rotate_secret']));
    const put = audit.body.items.find((e: { action: string }) => e.action === 'http_transport.update');
    // The audit log masks every field named like a secret, this opt-in included.
    expect(put.changes).toEqual({
      url: `${peer.url}/hooks/initech`,
      include_secret_variables: '********',
      header_names: ['X-Api-Key'],
    });
    for (const text of [
      exported.text,
      audit.text,
      (await app.request('GET', '/v1/http-transport', { token: t.serviceKey })).text,
    ]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(rotated);
      expect(text).not.toContain('hdr-key-55aa');
    }
    expect(app.logs.join('\n')).not.toContain('hdr-key-55aa');
    expect(app.logs.join('\n')).not.toContain(rotated);
  });
});

describe('DELETE /v1/http-transport', () => {
  it('removes the transport (204) and only the caller tenant’s', async () => {
    const put = await app.request('PUT', '/v1/http-transport', {
      token: b.serviceKey,
      body: { url: `${peer.url}/hooks/globex` },
    });
    expect(put.status).toBe(200);
    const res = await app.request('DELETE', '/v1/http-transport', { token: b.serviceKey });
    expect(res.status).toBe(204);
    expect((await app.request('GET', '/v1/http-transport', { token: b.serviceKey })).status).toBe(404);
    expect((await app.request('GET', '/v1/http-transport', { token: a.serviceKey })).status).toBe(200);
  });

  it('answers 401/403 as a management route', async () => {
    await expectManagementOnly(app, a, 'DELETE', '/v1/http-transport');
  });
});

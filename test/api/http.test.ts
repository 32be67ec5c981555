// The HTTP conventions every route inherits: health, readiness, unknown routes, wrong methods,
// malformed and oversized bodies, missing credentials, request ids, CORS and security headers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTenantFixture } from '../support/fixtures.ts';
import { createApp } from '../../server/api/app.ts';
import { defineRoute } from '../../server/api/route.ts';
import { routes } from '../../server/api/routes/index.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ config: { maxBodyBytes: 1024 * 1024 } });
});
afterAll(async () => {
  await app?.close();
});

describe('health', () => {
  it('GET /healthz answers 200 while the process is alive', async () => {
    const res = await app.request('GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /readyz answers 200 when database and queue are reachable', async () => {
    const res = await app.request('GET', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready', database: true, queue: true });
  });
});

describe('routing errors', () => {
  it('answers 404 ErrorResponse for an unknown route', async () => {
    const res = await app.request('GET', '/v1/no-such-thing');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: expect.any(String), code: 'route_not_found' });
  });

  it('answers 405 with Allow for a known path and another method', async () => {
    const res = await app.request('DELETE', '/healthz');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
    expect(res.body.code).toBe('method_not_allowed');
  });
});

describe('cross-cutting headers', () => {
  it('echoes a sane X-Request-Id and replaces a hostile one', async () => {
    const ok = await app.request('GET', '/healthz', { headers: { 'x-request-id': 'abc-123' } });
    expect(ok.headers.get('x-request-id')).toBe('abc-123');
    const bad = await app.request('GET', '/healthz', {
      headers: { 'x-request-id': 'x\u0000y'.replace('\u0000', '%') + '<script>' },
    });
    expect(bad.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('sets security headers and no-store', async () => {
    const res = await app.request('GET', '/healthz');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
  });

  it('adds CORS headers to a contact-token route for an allowed origin, once each, even to its 401', async () => {
    const res = await app.request('GET', `/v1/contacts/${randomUUID()}/notifications`, {
      headers: { origin: 'https://app.example' },
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('vary')).toBe('Origin');
    expect(res.headers.get('access-control-expose-headers')).toContain('RateLimit-Remaining');
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers CORS preflight for contact-token routes', async () => {
    const res = await app.request('OPTIONS', `/v1/contacts/${randomUUID()}/notifications`, {
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
    expect(res.headers.get('access-control-allow-methods')).toMatch(/PATCH/);
  });

  it('gives other origins no CORS grant on sign-in, management, service-key and unknown routes', async () => {
    const origin = { origin: 'https://evil.example' };
    for (const [method, path] of [
      ['POST', '/v1/auth/login'],
      ['GET', '/v1/api-keys'],
      ['POST', '/v1/notifications'],
      ['GET', '/healthz'],
      ['GET', '/v1/anything'],
    ] as const) {
      const preflight = await app.request('OPTIONS', path, {
        headers: { ...origin, 'access-control-request-method': method },
      });
      expect(preflight.headers.get('access-control-allow-origin'), `preflight ${method} ${path}`).toBeNull();
      const res = await app.request(method, path, { headers: origin, body: method === 'POST' ? {} : undefined });
      expect(res.headers.get('access-control-allow-origin'), `${method} ${path}`).toBeNull();
    }
  });

  it('logs the route pattern with the request id, never the query string', async () => {
    await app.request('GET', '/healthz?token=secret-value-123', { headers: { 'x-request-id': 'log-check-1' } });
    const line = app.logs.find((l) => l.includes('log-check-1'));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ msg: 'request', route: '/healthz', status: 200 });
    expect(app.logs.join('\n')).not.toContain('secret-value-123');
  });
});

// The body, validation and credential rules are the app wrapper's, shared by every route; they are
// exercised here through the real createApp with probe routes, so they hold before any feature exists.
describe('request bodies and credentials (route wrapper)', () => {
  const Echo = z.object({ name: z.string().min(1), count: z.number().int() }).meta({ id: 'ProbeEchoRequest' });
  const probeRoutes = [
    defineRoute({
      method: 'POST',
      path: '/v1/probe/echo',
      summary: 'probe',
      tag: 'probe',
      auth: 'public',
      body: Echo,
      responses: { 200: Echo },
      handler: ({ body }) => body,
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/probe/secured',
      summary: 'probe',
      tag: 'probe',
      auth: 'management',
      responses: { 200: z.object({ ok: z.boolean() }) },
      handler: () => ({ ok: true }),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/probe/explode',
      summary: 'probe',
      tag: 'probe',
      auth: 'public',
      responses: { 200: z.object({}) },
      handler: () => {
        throw new Error('database password is hunter2');
      },
    }),
  ];
  const probe = () => createApp(app.runtime, [...routes, ...probeRoutes]);
  const call = async (method: string, path: string, init: RequestInit = {}) => {
    const res = await probe().request(path, { method, ...init });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };

  it('accepts a valid body', async () => {
    const res = await call('POST', '/v1/probe/echo', {
      body: JSON.stringify({ name: 'a', count: 1 }),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: 'a', count: 1 });
  });

  it('answers 422 HTTPValidationError for malformed JSON', async () => {
    const res = await call('POST', '/v1/probe/echo', {
      body: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
  });

  it('answers 422 naming where a body nests deeper than 32 levels, and takes 32', async () => {
    const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const post = (body: string) =>
      call('POST', '/v1/probe/echo', { body, headers: { 'content-type': 'application/json' } });
    const deep = await post(`{"name":"a","count":1,"extra":${nested(4400)}}`);
    expect(deep.status).toBe(422);
    expect(deep.body.detail).toEqual([
      { loc: ['body', 'extra', ...Array(31).fill('a')], msg: 'Nested deeper than 32 levels', type: 'json_too_deep' },
    ]);
    // Brackets inside strings are text, not nesting.
    const inStrings = await post(JSON.stringify({ name: '{['.repeat(100), count: 1, extra: JSON.parse(nested(31)) }));
    expect(inStrings.status).toBe(200);
  });

  it('answers 422, not 500, for a trigger whose variables nest thousands deep', async () => {
    const fx = await createTenantFixture(app, 'Deep');
    const res = await app.request('POST', '/v1/notifications', {
      token: fx.serviceKey,
      rawBody: `{"type":"welcome","recipients":["u1"],"variables":${'{"a":'.repeat(4400)}1${'}'.repeat(4400)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({
      loc: ['body', 'variables', ...Array(31).fill('a')],
      type: 'json_too_deep',
    });
  });

  it('answers 422 with field locations for a body that fails validation', async () => {
    const res = await call('POST', '/v1/probe/echo', {
      body: JSON.stringify({ name: '', count: 'x' }),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: { loc: string[] }) => d.loc.join('.'));
    expect(locs).toEqual(expect.arrayContaining(['body.name', 'body.count']));
  });

  it('answers 422 for a string or key PostgreSQL cannot store (U+0000, an unpaired surrogate), naming where, however deep', async () => {
    const post = (body: string) =>
      call('POST', '/v1/probe/echo', { body, headers: { 'content-type': 'application/json' } });
    const inValue = await post(JSON.stringify({ name: 'a\u0000b', count: 1 }));
    expect(inValue.status).toBe(422);
    expect(inValue.body.detail).toEqual([
      { loc: ['body', 'name'], msg: 'must not contain the NUL character (U+0000)', type: 'value_error' },
    ]);
    const inKey = await post(JSON.stringify({ name: 'a', count: 1, extra: { 'k\u0000': 1 } }));
    expect(inKey.body.detail[0].loc).toEqual(['body', 'extra', 'k\u0000']);
    // Half a surrogate pair, escaped: valid JSON text, but no Unicode string PostgreSQL could store.
    const surrogate = await post('{"name": "a", "count": 1, "extra": [{"k": "x\\ud800"}]}');
    expect(surrogate.status).toBe(422);
    expect(surrogate.body.detail).toEqual([
      {
        loc: ['body', 'extra', 0, 'k'],
        msg: 'must be well-formed Unicode (an unpaired surrogate is not)',
        type: 'value_error',
      },
    ]);
    expect((await post('{"name": "\\ud83d\\ude00", "count": 1}')).status).toBe(200); // a whole pair is fine
    const deep = await post(`{"name": "a", "count": 1, "extra": ${'['.repeat(30)}"\\u0000"${']'.repeat(30)}}`);
    expect(deep.status).toBe(422);
    expect(deep.body.detail[0].loc).toEqual(['body', 'extra', ...Array(30).fill(0)]);
  });

  it('answers 422 for a missing body', async () => {
    const res = await call('POST', '/v1/probe/echo');
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body']);
  });

  it('answers 413 for a body over the cap, by Content-Length and by streamed size', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10), count: 1 });
    const declared = await call('POST', '/v1/probe/echo', {
      body: big,
      headers: { 'content-type': 'application/json' },
    });
    expect(declared.status).toBe(413);
    expect(declared.body).toEqual({ detail: expect.stringContaining('exceeds'), code: 'payload_too_large' });
    // Over the real server, chunked (no Content-Length): the stream is counted as it arrives.
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 20; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(64 * 1024)));
        controller.close();
      },
    });
    const chunked = await probe().request('/v1/probe/echo', {
      method: 'POST',
      body: stream,
      headers: { 'content-type': 'application/json' },
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
  });

  it('answers 401 with WWW-Authenticate for a missing or bad credential', async () => {
    const missing = await call('GET', '/v1/probe/secured');
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expect(missing.body).toEqual({ detail: expect.any(String), code: 'unauthorized' });
    const bad = await call('GET', '/v1/probe/secured', { headers: { authorization: 'Bearer sk_not_a_real_key' } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toContain('invalid_token');
    const garbage = await call('GET', '/v1/probe/secured', {
      headers: { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln' },
    });
    expect(garbage.status).toBe(401);
  });

  it('answers 500 with a reference id and no internals for a real fault, and logs it', async () => {
    const res = await call('GET', '/v1/probe/explode');
    expect(res.status).toBe(500);
    expect(res.body.code).toBe('internal_error');
    expect(JSON.stringify(res.body)).not.toContain('hunter2');
    const ref = /reference ([0-9a-f-]{36})/.exec(res.body.detail)![1];
    expect(app.logs.some((l) => l.includes(ref!) && l.includes('unhandled error'))).toBe(true);
  });
});

// CORS per route kind on an install that narrows `corsOrigins`: the routes a contact token reaches
// answer the install's origins and the contact's own tenant's (tenants.cors_origins); a preflight,
// which carries no credential, answers any tenant's origin; sign-in, management and service-key routes
// answer no other origin at all. Tenants' origins are cached for TENANT_ORIGINS_TTL_MS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTenantFixture, sql, type TenantFixture } from '../support/fixtures.ts';
import { ManualClock } from '../../server/base/clock.ts';
import { TENANT_ORIGINS_TTL_MS } from '../../server/resources/tenants.ts';

const INSTALL_ORIGIN = 'https://install.example';
const A_ORIGIN = 'https://app.a.example';
const B_ORIGIN = 'https://app.b.example';

let app: TestApp;
let clock: ManualClock;
let a: TenantFixture;
let b: TenantFixture;
let aContact: string;
let bContact: string;

beforeAll(async () => {
  clock = new ManualClock();
  app = await startTestApp({ clock, config: { corsOrigins: [INSTALL_ORIGIN] } });
  a = await createTenantFixture(app, 'A');
  b = await createTenantFixture(app, 'B');
  aContact = await a.contact('ann');
  bContact = await b.contact('bob');
  for (const [tenant, origin] of [
    [a, A_ORIGIN],
    [b, B_ORIGIN],
  ] as const) {
    const res = await app.request('PATCH', `/v1/auth/tenants/${tenant.tenantId}`, {
      token: tenant.ownerToken,
      body: { cors_origins: [origin] },
    });
    expect(res.status, res.text).toBe(200);
  }
});
afterAll(async () => {
  await app?.close();
});

const inbox = (contactId: string) => `/v1/contacts/${contactId}/notifications`;
const allowOrigin = (res: { headers: Headers }) => res.headers.get('access-control-allow-origin');

function get(path: string, origin: string, token?: string) {
  return app.request('GET', path, { headers: { origin }, ...(token ? { token } : {}) });
}

function preflight(path: string, origin: string, method = 'GET') {
  return app.request('OPTIONS', path, {
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization' },
  });
}

describe('contact-token routes', () => {
  it("answer the contact's tenant's origin, exactly, with Vary: Origin", async () => {
    for (const path of [inbox(aContact), `/v1/contacts/${aContact}/preferences`, '/v1/web-push/public-key']) {
      const res = await get(path, A_ORIGIN, a.tokenFor(aContact));
      expect(res.status, `${path}: ${res.text}`).toBeLessThan(500);
      expect(allowOrigin(res), path).toBe(A_ORIGIN);
      expect(res.headers.get('vary'), path).toBe('Origin');
      expect(res.headers.get('access-control-expose-headers'), path).toContain('X-Request-Id');
      expect(res.headers.get('access-control-allow-credentials'), path).toBeNull();
    }
    expect((await get(inbox(aContact), A_ORIGIN, a.tokenFor(aContact))).status).toBe(200);
    // The tenant's own page reads the errors of its tokens too (here: another tenant's contact).
    const foreign = await get(inbox(bContact), A_ORIGIN, a.tokenFor(aContact));
    expect(foreign.status).toBe(404);
    expect(allowOrigin(foreign)).toBe(A_ORIGIN);
  });

  it("refuse another tenant's origin, an unknown one and a token-less request (no ACAO, still Vary)", async () => {
    const cases = [
      ['B origin, A token', await get(inbox(aContact), B_ORIGIN, a.tokenFor(aContact)), 200],
      ['A origin, B token', await get(inbox(bContact), A_ORIGIN, b.tokenFor(bContact)), 200],
      ['unknown origin', await get(inbox(aContact), 'https://evil.example', a.tokenFor(aContact)), 200],
      ['A origin, no token', await get(inbox(aContact), A_ORIGIN), 401],
      ['A origin, bad token', await get(inbox(aContact), A_ORIGIN, 'not-a-token'), 401],
    ] as const;
    for (const [name, res, status] of cases) {
      expect(res.status, name).toBe(status);
      expect(allowOrigin(res), name).toBeNull();
      expect(res.headers.get('access-control-expose-headers'), name).toBeNull();
      expect(res.headers.get('vary'), name).toBe('Origin');
    }
  });

  it('grant a service key or a console token the install origins only, not the tenant list', async () => {
    const path = `/v1/contacts/${aContact}/preferences`;
    for (const token of [a.serviceKey, a.ownerToken]) {
      const tenantOrigin = await get(path, A_ORIGIN, token);
      expect(tenantOrigin.status).toBe(200);
      expect(allowOrigin(tenantOrigin)).toBeNull();
      expect(allowOrigin(await get(path, INSTALL_ORIGIN, token))).toBe(INSTALL_ORIGIN);
    }
  });

  it("answer the install's origins for any tenant's token and without one", async () => {
    expect(allowOrigin(await get(inbox(aContact), INSTALL_ORIGIN, a.tokenFor(aContact)))).toBe(INSTALL_ORIGIN);
    expect(allowOrigin(await get(inbox(bContact), INSTALL_ORIGIN, b.tokenFor(bContact)))).toBe(INSTALL_ORIGIN);
    const unauthenticated = await get(inbox(aContact), INSTALL_ORIGIN);
    expect(unauthenticated.status).toBe(401);
    expect(allowOrigin(unauthenticated)).toBe(INSTALL_ORIGIN);
  });

  it("open the stream to the tenant's origin only", async () => {
    for (const [origin, expected] of [
      [A_ORIGIN, A_ORIGIN],
      [B_ORIGIN, null],
    ] as const) {
      const abort = new AbortController();
      const res = await fetch(`${app.url}/v1/contacts/${aContact}/stream`, {
        headers: { origin, authorization: `Bearer ${a.tokenFor(aContact)}` },
        signal: abort.signal,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      expect(res.headers.get('access-control-allow-origin')).toBe(expected);
      abort.abort();
    }
  });
});

describe('preflight', () => {
  it("answers an origin that some tenant lists, or the install's, with the methods and headers", async () => {
    for (const origin of [A_ORIGIN, B_ORIGIN, INSTALL_ORIGIN]) {
      const res = await preflight(inbox(aContact), origin);
      expect(res.status).toBe(204);
      expect(allowOrigin(res), origin).toBe(origin);
      expect(res.headers.get('vary')).toBe('Origin');
      expect(res.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
      expect(res.headers.get('access-control-allow-methods')).toMatch(/PATCH/);
    }
    const patch = await preflight(`/v1/contacts/${aContact}/notifications/${aContact}`, A_ORIGIN, 'PATCH');
    expect(allowOrigin(patch)).toBe(A_ORIGIN);
  });

  it('answers no other origin', async () => {
    const res = await preflight(inbox(aContact), 'https://evil.example');
    expect(res.status).toBe(204);
    expect(allowOrigin(res)).toBeNull();
    expect(res.headers.get('access-control-allow-methods')).toBeNull();
    expect(res.headers.get('vary')).toBe('Origin');
  });
});

describe('sign-in, management and service-key routes', () => {
  it("answer no origin, neither a tenant's nor the install's, with any credential", async () => {
    const routes = [
      ['POST', '/v1/auth/login', undefined],
      ['GET', '/v1/auth/tenants', a.ownerToken],
      ['PATCH', `/v1/auth/tenants/${a.tenantId}`, a.ownerToken],
      ['GET', '/v1/api-keys', a.serviceKey],
      ['GET', '/v1/api-keys', a.ownerToken],
      ['GET', '/v1/contacts', a.serviceKey],
      ['POST', '/v1/notifications', a.serviceKey],
      ['POST', '/v1/contacts/tokens', a.serviceKey],
      ['GET', '/v1/api-keys', a.tokenFor(aContact)],
    ] as const;
    for (const origin of [A_ORIGIN, INSTALL_ORIGIN]) {
      for (const [method, path, token] of routes) {
        const pre = await preflight(path, origin, method);
        expect(allowOrigin(pre), `preflight ${method} ${path}`).toBeNull();
        const res = await app.request(method, path, {
          headers: { origin },
          ...(token ? { token } : {}),
          ...(method === 'GET' ? {} : { body: {} }),
        });
        expect(res.status, `${method} ${path}`).toBeLessThan(500);
        expect(allowOrigin(res), `${method} ${path}`).toBeNull();
        expect(res.headers.get('access-control-allow-methods'), `${method} ${path}`).toBeNull();
      }
    }
  });
});

describe("the tenants' origins in memory", () => {
  it('holds a change made in this process at once, for the request and the preflight', async () => {
    const c = await createTenantFixture(app, 'C');
    const contact = await c.contact('cy');
    const origin = 'https://app.c.example';
    // Both lists are read (and kept) before the change.
    expect(allowOrigin(await get(inbox(contact), origin, c.tokenFor(contact)))).toBeNull();
    expect(allowOrigin(await preflight(inbox(contact), origin))).toBeNull();
    const set = await app.request('PATCH', `/v1/auth/tenants/${c.tenantId}`, {
      token: c.ownerToken,
      body: { cors_origins: [origin] },
    });
    expect(set.status).toBe(200);
    expect(allowOrigin(await get(inbox(contact), origin, c.tokenFor(contact)))).toBe(origin);
    expect(allowOrigin(await preflight(inbox(contact), origin))).toBe(origin);
    const cleared = await app.request('PATCH', `/v1/auth/tenants/${c.tenantId}`, {
      token: c.ownerToken,
      body: { cors_origins: [] },
    });
    expect(cleared.body.cors_origins).toEqual([]);
    expect(allowOrigin(await get(inbox(contact), origin, c.tokenFor(contact)))).toBeNull();
  });

  it('sees a change made by another process once the kept list expires, and not a query per request', async () => {
    const d = await createTenantFixture(app, 'D');
    const contact = await d.contact('dee');
    const before = 'https://before.d.example';
    const after = 'https://after.d.example';
    await sql(app, `UPDATE tenants SET cors_origins = $2 WHERE id = $1`, [d.tenantId, [before]]);
    expect(allowOrigin(await get(inbox(contact), before, d.tokenFor(contact)))).toBe(before);
    expect(allowOrigin(await preflight(inbox(contact), before))).toBeNull(); // the set read earlier holds
    // Written behind this process's back (another server, the CLI): the kept lists answer meanwhile.
    await sql(app, `UPDATE tenants SET cors_origins = $2 WHERE id = $1`, [d.tenantId, [after]]);
    clock.advance(TENANT_ORIGINS_TTL_MS - 1000);
    expect(allowOrigin(await get(inbox(contact), before, d.tokenFor(contact)))).toBe(before);
    expect(allowOrigin(await get(inbox(contact), after, d.tokenFor(contact)))).toBeNull();
    clock.advance(2000);
    expect(allowOrigin(await get(inbox(contact), before, d.tokenFor(contact)))).toBeNull();
    expect(allowOrigin(await get(inbox(contact), after, d.tokenFor(contact)))).toBe(after);
    expect(allowOrigin(await preflight(inbox(contact), after))).toBe(after);
  });
});

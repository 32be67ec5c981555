// A single-tenant install: sign-up is closed (409 signup_closed) and tenant creation is disabled (403),
// while the install's users sign in and manage their one tenant as usual.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { PASSWORD, createTenantFixture, requestAs, uniqueEmail } from '../support/fixtures.ts';

let app: TestApp;
let ownerEmail: string;

beforeAll(async () => {
  app = await startTestApp({ config: { mode: 'single', trustedProxies: ['127.0.0.1'] } });
  ownerEmail = (await createTenantFixture(app, 'On-prem')).ownerEmail;
});
afterAll(async () => {
  await app?.close();
});

describe('single-tenant mode', () => {
  it('POST /v1/auth/register answers 409 signup_closed', async () => {
    const res = await requestAs(app, 'POST', '/v1/auth/register', {
      body: { email: uniqueEmail(), password: PASSWORD, tenant_name: 'Another' },
    });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ detail: expect.any(String), code: 'signup_closed' });
  });

  it('POST /v1/auth/tenants answers 403 tenant_creation_disabled', async () => {
    const login = await requestAs(app, 'POST', '/v1/auth/login', { body: { email: ownerEmail, password: PASSWORD } });
    expect(login.status).toBe(200);
    const res = await app.request('POST', '/v1/auth/tenants', {
      token: login.body.access_token,
      body: { name: 'Second' },
    });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('tenant_creation_disabled');
    const list = await app.request('GET', '/v1/auth/tenants', { token: login.body.access_token });
    expect(list.body.map((t: any) => t.name)).toEqual(['On-prem']);
  });
});

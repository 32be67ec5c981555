// Contact tokens: minting (service key, 404 for an unknown contact, rate limited per account) and
// what a token may reach: its own contact only, never a management route, never after expiry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';
import { ManualClock } from '../../server/base/clock.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;
const clock = new ManualClock(Date.parse('2026-02-01T00:00:00Z'));

beforeAll(async () => {
  app = await startTestApp({ clock });
  acme = await createTenantFixture(app, 'Acme');
  globex = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  await app?.close();
});

const mint = (externalId: unknown, token = acme.serviceKey) =>
  app.request('POST', '/v1/contacts/tokens', { body: { external_id: externalId }, token });

describe('POST /v1/contacts/tokens', () => {
  it('mints a bearer token for the contact with its lifetime', async () => {
    const id = await acme.contact('tok-1');
    const res = await mint('tok-1');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ token: expect.any(String), token_type: 'bearer', expires_in: 3600, contact_id: id });
    // The token works for the contact's own routes.
    const prefs = await app.request('GET', `/v1/contacts/${id}/preferences`, { token: res.body.token });
    expect(prefs.status).toBe(200);
  });

  it('answers 404 for an unknown contact, and the documented pattern (mint, create on 404, mint) works', async () => {
    const first = await mint('new-user');
    expect(first.status).toBe(404);
    expect(first.body.code).toBe('not_found');
    expect(
      (await app.request('POST', '/v1/contacts', { body: { external_id: 'new-user' }, token: acme.serviceKey })).status,
    ).toBe(201);
    const second = await mint('new-user');
    expect(second.status).toBe(200);
  });

  it("answers 404 for another tenant's contact", async () => {
    await globex.contact('globex-only');
    expect((await mint('globex-only')).status).toBe(404);
  });

  it('answers 422 for a missing or blank external_id', async () => {
    expect((await mint('')).status).toBe(422);
    const res = await app.request('POST', '/v1/contacts/tokens', { body: {}, token: acme.serviceKey });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'external_id']);
  });

  it('answers 401 without a credential and 403 for a contact token', async () => {
    expect((await app.request('POST', '/v1/contacts/tokens', { body: { external_id: 'tok-1' } })).status).toBe(401);
    const id = await acme.contact('tok-minter');
    expect((await mint('tok-minter', acme.tokenFor(id))).status).toBe(403);
  });

  it('is rate limited per account at 120, refilling 2 per second', async () => {
    const tenant = await createTenantFixture(app, 'Minty');
    await tenant.contact('m');
    const call = () => mint('m', tenant.serviceKey);
    for (let i = 0; i < 120; i++) {
      const res = await call();
      expect(res.status).toBe(200);
    }
    const limited = await call();
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.headers.get('ratelimit-limit')).toBe('120');
    clock.advance(510);
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(429);
  });
});

describe('what a contact token reaches', () => {
  it("answers 404 on another contact's routes, 403 on management routes, 401 once expired", async () => {
    const me = await acme.contact('scope-me');
    const other = await acme.contact('scope-other');
    const token = acme.tokenFor(me, 120);
    for (const path of [
      `/v1/contacts/${other}/preferences`,
      `/v1/contacts/${other}/push-subscriptions`,
      `/v1/contacts/${other}/notifications`,
    ]) {
      expect((await app.request('GET', path, { token })).status).toBe(404);
    }
    expect((await app.request('GET', `/v1/contacts/${me}`, { token })).status).toBe(403);
    expect((await app.request('GET', '/v1/contacts?external_id=scope-me', { token })).status).toBe(403);
    expect((await app.request('GET', `/v1/contacts/${me}/notifications`, { token })).status).toBe(200);
    clock.advance(121_000);
    expect((await app.request('GET', `/v1/contacts/${me}/notifications`, { token })).status).toBe(401);
  });

  it('is no longer usable once its contact is deleted', async () => {
    const id = await acme.contact('deleted-later');
    const token = acme.tokenFor(id);
    expect((await app.request('DELETE', `/v1/contacts/${id}`, { token: acme.serviceKey })).status).toBe(204);
    expect((await app.request('GET', `/v1/contacts/${id}/preferences`, { token })).status).toBe(404);
  });

  it('a token forged with another tenant id does not verify', async () => {
    const id = await acme.contact('forged');
    const [header, payload] = acme.tokenFor(id).split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const tampered = Buffer.from(JSON.stringify({ ...claims, tid: globex.tenantId })).toString('base64url');
    const forged = `${header}.${tampered}.${acme.tokenFor(id).split('.')[2]}`;
    expect((await app.request('GET', `/v1/contacts/${id}/preferences`, { token: forged })).status).toBe(401);
  });
});

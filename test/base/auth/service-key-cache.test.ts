// The process's cache of verified service keys: used only while change notices are heard, exact
// under revocation and deletion from anywhere (another process, the CLI, plain SQL).
import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceKeyCache, SERVICE_KEY_CACHE_TTL_MS } from '../../../server/base/auth/service-key-cache.ts';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { eventually } from '../../support/eventually.ts';
import { createTenantFixture, type TenantFixture } from '../../support/fixtures.ts';

const credential = (apiKeyId: string) => ({ kind: 'service' as const, tenantId: 't1', apiKeyId });

describe('ServiceKeyCache', () => {
  it('caches nothing until change notices are heard, and forgets everything when they stop', () => {
    const cache = new ServiceKeyCache();
    cache.remember('h1', credential('k1'), cache.generation, 0);
    expect(cache.get('h1', 1)).toBeNull();
    cache.setListening(true);
    cache.remember('h1', credential('k1'), cache.generation, 0);
    expect(cache.get('h1', 1)).toEqual(credential('k1'));
    cache.setListening(false);
    expect(cache.get('h1', 2)).toBeNull();
    cache.setListening(true);
    expect(cache.get('h1', 3)).toBeNull();
  });

  it('expires an entry after the TTL and evicts a changed key by id', () => {
    const cache = new ServiceKeyCache();
    cache.setListening(true);
    cache.remember('h1', credential('k1'), cache.generation, 0);
    cache.remember('h2', credential('k2'), cache.generation, 0);
    expect(cache.get('h1', SERVICE_KEY_CACHE_TTL_MS - 1)).not.toBeNull();
    expect(cache.get('h1', SERVICE_KEY_CACHE_TTL_MS)).toBeNull();
    cache.evict('k2');
    expect(cache.get('h2', 1)).toBeNull();
  });

  it('does not store a lookup that raced a change notice', () => {
    const cache = new ServiceKeyCache();
    cache.setListening(true);
    const before = cache.generation; // a lookup starts...
    cache.evict('k1'); // ...the key is revoked meanwhile...
    cache.remember('h1', credential('k1'), before, 0); // ...and the lookup's (stale) answer comes back
    expect(cache.get('h1', 1)).toBeNull();
  });
});

describe('service keys cached by a running server', () => {
  let app: TestApp;
  let acme: TenantFixture;
  let sql: pg.Client;
  beforeAll(async () => {
    app = await startTestApp();
    acme = await createTenantFixture(app, 'Acme');
    sql = new pg.Client({ connectionString: app.runtime.db.url });
    await sql.connect();
  });
  afterAll(async () => {
    await sql?.end();
    await app?.close();
  });

  const issue = async (name: string) =>
    (await app.request('POST', '/v1/api-keys', { token: acme.serviceKey, body: { name } })).body as {
      id: string;
      key: string;
    };
  const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');
  /** Polls until the key is refused; the change notice arrives within milliseconds. */
  const refusedWithin = async (key: string, ms: number) => {
    return eventually(async () => (await app.request('GET', '/v1/api-keys', { token: key })).status === 401, {
      timeoutMs: ms,
      intervalMs: 10,
    }).catch(() => false);
  };

  it('keeps a verified key, and drops it when another process revokes it', async () => {
    const issued = await issue('revoked elsewhere');
    expect((await app.request('GET', '/v1/api-keys', { token: issued.key })).status).toBe(200);
    expect(app.runtime.serviceKeys.get(hashOf(issued.key), app.runtime.clock.now())).toMatchObject({
      apiKeyId: issued.id,
    });
    await sql.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [issued.id]);
    expect(await refusedWithin(issued.key, 2000)).toBe(true);
  });

  it('drops a key whose row is deleted (e.g. with its tenant)', async () => {
    const issued = await issue('deleted elsewhere');
    expect((await app.request('GET', '/v1/api-keys', { token: issued.key })).status).toBe(200);
    await sql.query(`DELETE FROM api_keys WHERE id = $1`, [issued.id]);
    expect(await refusedWithin(issued.key, 2000)).toBe(true);
  });

  it('is not disturbed by last-use updates (no notice for them)', async () => {
    const issued = await issue('busy');
    expect((await app.request('GET', '/v1/api-keys', { token: issued.key })).status).toBe(200);
    const generation = app.runtime.serviceKeys.generation;
    await sql.query(`UPDATE api_keys SET last_used_at = now() - interval '1 hour' WHERE id = $1`, [issued.id]);
    await new Promise((r) => setTimeout(r, 100));
    expect(app.runtime.serviceKeys.generation).toBe(generation);
    expect(app.runtime.serviceKeys.get(hashOf(issued.key), app.runtime.clock.now())).not.toBeNull();
  });
});

// A tenant for management-route tests, with every kind of credential, made through the services (no identity routes needed): its
// owner and an admin (console access tokens), a user who is not a member (a token scoped to the tenant
// that must not pass), a contact token, and a service key.
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from './app.ts';
import { createTenant } from '../../server/services/tenants.ts';
import { createUser } from '../../server/services/users.ts';
import { issueApiKey } from '../../server/services/api-keys.ts';
import { query } from '../../server/db/sql.ts';
import { newId } from '../../server/ids.ts';

export interface ManagementFixture {
  tenantId: string;
  ownerId: string;
  serviceKey: string;
  apiKeyId: string;
  ownerToken: string;
  adminToken: string;
  /** A console user's token for this tenant, though the user is not a member of it. */
  outsiderToken: string;
  contactToken: string;
}

export async function createManagementFixture(app: TestApp, name = 'Acme'): Promise<ManagementFixture> {
  const em = app.runtime.orm.em.fork();
  const tag = randomBytes(4).toString('hex');
  const password = 'correct horse battery staple';
  const owner = await createUser(em, { email: `owner-${tag}@example.test`, password, verified: true });
  const admin = await createUser(em, { email: `admin-${tag}@example.test`, password, verified: true });
  const outsider = await createUser(em, { email: `outsider-${tag}@example.test`, password, verified: true });
  const tenant = await createTenant(em, { name, ownerUserId: owner.id, makeDefault: true });
  await query(em, `INSERT INTO memberships (user_id, tenant_id, role, is_default) VALUES ($1, $2, 'admin', true)`, [admin.id, tenant.id]);
  const issued = await issueApiKey(em, tenant.id, 'fixture');
  const now = app.runtime.clock.now();
  const sign = (kind: 'access' | 'contact', subject: string) => app.runtime.tokens.sign(kind, subject, tenant.id, 3600, now);
  return {
    tenantId: tenant.id,
    ownerId: owner.id,
    serviceKey: issued.key,
    apiKeyId: issued.id,
    ownerToken: sign('access', owner.id),
    adminToken: sign('access', admin.id),
    outsiderToken: sign('access', outsider.id),
    contactToken: sign('contact', newId()),
  };
}

/** A management route refuses a missing credential (401), a contact token and a non-member's token (403). */
export async function expectManagementOnly(app: TestApp, fx: ManagementFixture, method: string, path: string, body?: unknown): Promise<void> {
  const none = await app.request(method, path, { body });
  expect(none.status).toBe(401);
  expect(none.body.code).toBe('unauthorized');
  const contact = await app.request(method, path, { body, token: fx.contactToken });
  expect(contact.status).toBe(403);
  expect(contact.body.code).toBe('wrong_credential_kind');
  const outsider = await app.request(method, path, { body, token: fx.outsiderToken });
  expect(outsider.status).toBe(403);
  expect(outsider.body.code).toBe('not_a_member');
}

/** A 422 HTTPValidationError with an entry at `loc`. */
export function expectValidationError(res: { status: number; body: any }, loc: Array<string | number>): void {
  expect(res.status).toBe(422);
  expect(Array.isArray(res.body.detail)).toBe(true);
  const locs = res.body.detail.map((d: { loc: unknown[] }) => JSON.stringify(d.loc));
  expect(locs).toContain(JSON.stringify(loc));
  for (const entry of res.body.detail) expect(entry).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
}

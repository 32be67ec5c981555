// Tenants and credentials for transport tests, made through the services (no identity routes needed):
// a tenant with its owner, a service key, a console access token and a contact token.
import { randomBytes } from 'node:crypto';
import { createTenant } from '../../server/services/tenants.ts';
import { createUser } from '../../server/services/users.ts';
import { hashServiceKey } from '../../server/http/auth.ts';
import { execute } from '../../server/db/sql.ts';
import { newId } from '../../server/ids.ts';
import type { Runtime } from '../../server/runtime.ts';

export interface SeededTenant {
  tenantId: string;
  userId: string;
  serviceKey: string;
  accessToken: string;
  contactToken: string;
}

let counter = 0;

export async function seedTenant(runtime: Runtime, name = 'Acme'): Promise<SeededTenant> {
  const em = runtime.orm.em.fork();
  const user = await createUser(em, { email: `owner${++counter}-${randomBytes(4).toString('hex')}@example.test`, password: 'correct horse battery', verified: true });
  const tenant = await createTenant(em, { name, ownerUserId: user.id, makeDefault: true });
  const serviceKey = `sk_${randomBytes(24).toString('base64url')}`;
  await execute(em, `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash) VALUES ($1, $2, 'test', $3, $4)`, [
    newId(),
    tenant.id,
    serviceKey.slice(0, 8),
    hashServiceKey(serviceKey),
  ]);
  const now = runtime.clock.now();
  return {
    tenantId: tenant.id,
    userId: user.id,
    serviceKey,
    accessToken: runtime.tokens.sign('access', user.id, tenant.id, 3600, now),
    contactToken: runtime.tokens.sign('contact', newId(), tenant.id, 3600, now),
  };
}

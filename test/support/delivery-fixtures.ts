// Test fixtures for delivery tests: a tenant with a service key, notification types and inbox
// templates written by SQL (their routes live on other branches), and waiting for events to settle.
import { randomBytes } from 'node:crypto';
import type { TestApp } from './app.ts';
import { createTenant } from '../../server/services/tenants.ts';
import { createUser } from '../../server/services/users.ts';
import { hashServiceKey } from '../../server/http/auth.ts';
import { newId } from '../../server/ids.ts';
import { execute, query, queryOne } from '../../server/db/sql.ts';

export interface ServiceTenant {
  tenantId: string;
  userId: string;
  key: string;
}

export async function createServiceTenant(app: TestApp, name = 'Acme'): Promise<ServiceTenant> {
  const em = app.runtime.orm.em.fork();
  const user = await createUser(em, { email: `owner-${randomBytes(4).toString('hex')}@example.test`, password: 'correct horse battery', verified: true });
  const tenant = await createTenant(em, { name, ownerUserId: user.id, makeDefault: true });
  const key = `sk_${randomBytes(24).toString('base64url')}`;
  await execute(em, `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash) VALUES ($1, $2, 'test', $3, $4)`, [
    newId(),
    tenant.id,
    key.slice(0, 8),
    hashServiceKey(key),
  ]);
  return { tenantId: tenant.id, userId: user.id, key };
}

export async function createType(
  app: TestApp,
  tenantId: string,
  input: { key: string; channels?: Record<string, boolean>; optOut?: boolean; variables?: Array<{ name: string; required: boolean }> },
): Promise<void> {
  await execute(
    app.runtime.orm.em.fork(),
    `INSERT INTO notification_types (id, tenant_id, key, name, channel_defaults, opt_out, variables) VALUES ($1, $2, $3, $3, $4, $5, $6)`,
    [
      newId(),
      tenantId,
      input.key,
      JSON.stringify(input.channels ?? { inbox: true, email: false, push: false, web_push: false }),
      input.optOut ?? true,
      JSON.stringify(input.variables ?? []),
    ],
  );
}

export async function createInboxTemplate(
  app: TestApp,
  tenantId: string,
  input: { type: string; title: string; content: string; brand?: string; language?: string; actionUrl?: string },
): Promise<void> {
  await execute(
    app.runtime.orm.em.fork(),
    `INSERT INTO inbox_templates (id, tenant_id, notification_type_key, brand_key, language, title, content, action_url)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [newId(), tenantId, input.type, input.brand ?? 'default', input.language ?? 'en', input.title, input.content, input.actionUrl ?? null],
  );
}

export async function sql<T = Record<string, unknown>>(app: TestApp, text: string, params: unknown[] = []): Promise<T[]> {
  return query<T>(app.runtime.orm.em.fork(), text, params);
}

export async function sqlOne<T = Record<string, unknown>>(app: TestApp, text: string, params: unknown[] = []): Promise<T | undefined> {
  return queryOne<T>(app.runtime.orm.em.fork(), text, params);
}

/** Polls until every given event has a final status (the workers run in the test app or a subprocess). */
export async function waitForFinal(app: TestApp, eventIds: string[], timeoutMs = 20_000): Promise<Array<{ id: string; status: string }>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await sql<{ id: string; status: string }>(app, `SELECT id::text, status FROM events WHERE id = ANY($1::uuid[])`, [eventIds]);
    if (rows.length === eventIds.length && rows.every((r) => !['queued', 'processing'].includes(r.status))) return rows;
    if (Date.now() > deadline) throw new Error(`events not final after ${timeoutMs} ms: ${JSON.stringify(rows.filter((r) => ['queued', 'processing'].includes(r.status)).length)} pending`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// The one place tests get their data from.
// - Tenants: `createTenantFixture` makes a tenant through the real services (no identity routes
//   needed) with its owner, a service key, the owner's console token and contact tokens; `addUser` /
//   `addMembership` add people to it.
// - Rows whose routes are not under test, written by SQL: notification types, inbox templates, and
//   inbox items delivered exactly as the delivery worker's inbox channel writes them.
// - Identity flows through the API: registering and signing in from fresh client addresses, link
//   tokens read out of received system emails.
// - Waiting for events to be final, SQL shortcuts, and the shared assertions of management routes.
import { expect } from 'vitest';
import type { RequestOptions, TestApp, TestResponse } from './app.ts';
import type { ReceivedMail, SmtpPeer } from './smtp-peer.ts';
import { eventually } from './eventually.ts';
import { createTenant } from '../../server/resources/tenants.ts';
import { createUser } from '../../server/resources/users.ts';
import { issueApiKey } from '../../server/resources/api-keys.ts';
import { toInboxItemResponse } from '../../server/channels/inbox/inbox-items.ts';
import { storeInboxItem } from '../../server/channels/inbox/channel.ts';
import { execute, query, queryOne } from '../../server/base/db/sql.ts';
import { newId } from '../../server/base/ids.ts';
import type { InboxItemResponse } from '../../server/schemas/inbox.ts';

/* ---------------------------------------------------------------- users and tenants */

export const PASSWORD = 'correct horse battery staple';

let emailCounter = 0;
export function uniqueEmail(prefix = 'user'): string {
  emailCounter++;
  return `${prefix}${emailCounter}.${Math.random().toString(36).slice(2, 8)}@example.test`;
}

export interface TenantFixture {
  tenantId: string;
  ownerId: string;
  /** The owner signs in with this email and PASSWORD. */
  ownerEmail: string;
  /** A service key of the tenant (sk_...), and its id. */
  serviceKey: string;
  apiKeyId: string;
  /** A console access token of the tenant's owner. */
  ownerToken: string;
  /** A contact token of the tenant for a contact that does not exist. */
  contactToken: string;
  /** Mints a contact token directly (no rate limit charged). */
  tokenFor(contactId: string, ttlSeconds?: number): string;
  /** Creates a contact row; returns its id. */
  contact(externalId: string, fields?: { email?: string; name?: string }): Promise<string>;
}

/** A tenant (with its default brand) and its owner, made through the services. */
export async function createTenantFixture(app: TestApp, name = 'Acme'): Promise<TenantFixture> {
  const { runtime } = app;
  const em = runtime.orm.em.fork();
  const ownerEmail = uniqueEmail('owner');
  const owner = await createUser(em, { email: ownerEmail, password: PASSWORD, verified: true });
  const tenant = await createTenant(em, { name, ownerUserId: owner.id, makeDefault: true });
  const issued = await issueApiKey(em, tenant.id, 'fixture');
  const sign = (kind: 'access' | 'contact', subjectId: string, ttlSeconds = 3600) =>
    runtime.tokens.sign(kind, subjectId, tenant.id, ttlSeconds, runtime.clock.now());
  return {
    tenantId: tenant.id,
    ownerId: owner.id,
    ownerEmail,
    serviceKey: issued.key,
    apiKeyId: issued.id,
    ownerToken: sign('access', owner.id),
    contactToken: sign('contact', newId()),
    tokenFor: (contactId, ttlSeconds) => sign('contact', contactId, ttlSeconds),
    contact: async (externalId, fields = {}) => {
      const row = await queryOne<{ id: string }>(
        runtime.orm.em.fork(),
        `INSERT INTO contacts (id, tenant_id, external_id, email, name) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
        [newId(), tenant.id, externalId, fields.email ?? null, fields.name ?? null],
      );
      return row!.id;
    },
  };
}

export interface SignedUp {
  email: string;
  password: string;
  userId: string;
  tenantId: string;
  token: string;
}

/** Adds an existing user to a tenant. */
export async function addMembership(
  app: TestApp,
  userId: string,
  tenantId: string,
  role: 'owner' | 'admin' = 'admin',
  isDefault = false,
): Promise<void> {
  await execute(
    app.runtime.orm.em.fork(),
    `INSERT INTO memberships (user_id, tenant_id, role, is_default) VALUES ($1, $2, $3, $4)`,
    [userId, tenantId, role, isDefault],
  );
}

/** A user created directly (verified, no membership) and, if given, added to a tenant with a role and signed in to it. */
export async function addUser(
  app: TestApp,
  tenantId: string | null,
  role: 'owner' | 'admin' = 'admin',
  isDefault = false,
): Promise<SignedUp> {
  const email = uniqueEmail('member');
  const user = await createUser(app.runtime.orm.em.fork(), { email, password: PASSWORD, verified: true });
  if (tenantId) await addMembership(app, user.id, tenantId, role, isDefault);
  const token = tenantId ? app.runtime.tokens.sign('access', user.id, tenantId, 3600, app.runtime.clock.now()) : '';
  return { email, password: PASSWORD, userId: user.id, tenantId: tenantId ?? '', token };
}

/* ---------------------------------------------------------------- identity through the API */

let ipCounter = 0;
/** A fresh client address, sent as X-Forwarded-For (tests run with trustedProxies: ['127.0.0.1']). */
export function freshIp(): string {
  ipCounter++;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
}

/** A request from a fresh client address (rate limits per IP do not carry over). */
export function requestAs(
  app: TestApp,
  method: string,
  path: string,
  options: RequestOptions = {},
  ip = freshIp(),
): Promise<TestResponse> {
  return app.request(method, path, { ...options, headers: { ...options.headers, 'x-forwarded-for': ip } });
}

/** Registers through the API (multi mode) and signs in. */
export async function signUp(
  app: TestApp,
  options: { email?: string; password?: string; tenantName?: string } = {},
): Promise<SignedUp> {
  const email = options.email ?? uniqueEmail();
  const password = options.password ?? PASSWORD;
  const reg = await requestAs(app, 'POST', '/v1/auth/register', {
    body: { email, password, tenant_name: options.tenantName ?? 'Acme' },
  });
  expect(reg.status).toBe(201);
  const login = await requestAs(app, 'POST', '/v1/auth/login', { body: { email, password } });
  expect(login.status).toBe(200);
  return { email, password, userId: reg.body.id, tenantId: login.body.tenant_id, token: login.body.access_token };
}

/** The link token of a system email: /verify-email?token=, /reset-password?token= or /invitations/{token}. */
export function linkTokenOf(mail: ReceivedMail): string {
  const text = `${mail.parsed.text ?? ''}\n${typeof mail.parsed.html === 'string' ? mail.parsed.html : ''}`;
  const match = /(?:verify-email\?token=|reset-password\?token=|\/invitations\/)([A-Za-z0-9_-]{20,})/.exec(text);
  if (!match) throw new Error(`no link token in email: ${text.slice(0, 300)}`);
  return match[1]!;
}

export function mailsTo(smtp: SmtpPeer, to: string, subject?: RegExp): ReceivedMail[] {
  return smtp.messages.filter((m) => m.envelope.to.includes(to) && (!subject || subject.test(m.parsed.subject ?? '')));
}

export function waitForMail(smtp: SmtpPeer, to: string, subject: RegExp, after = 0): Promise<ReceivedMail> {
  return smtp.waitFor(
    (m) => m.envelope.to.includes(to) && subject.test(m.parsed.subject ?? '') && smtp.messages.indexOf(m) >= after,
  );
}

/** Waits until the queue has no pending email-link or system-email jobs (so "no mail was sent" can be asserted). */
export async function drainSystemEmails(app: TestApp): Promise<void> {
  await eventually(
    async () => {
      const row = await sqlOne<{ n: number }>(
        app,
        `SELECT count(*)::int AS n FROM pgboss.job WHERE name IN ('email-link-request', 'system-email') AND state IN ('created', 'retry', 'active')`,
      );
      return row!.n === 0;
    },
    { message: 'system emails did not drain' },
  );
}

/* ---------------------------------------------------------------- configuration and delivery rows */

/** A notification type written by SQL (for tests of other routes). */
/** Sets a tenant's trigger budget (tenant_limits, as `herald tenants limits` does): per minute and burst. */
export async function setTriggerLimit(app: TestApp, tenantId: string, perMinute: number, burst: number): Promise<void> {
  await execute(
    app.runtime.orm.em.fork(),
    `INSERT INTO tenant_limits (tenant_id, name, value) VALUES ($1, 'rate:trigger', $2), ($1, 'rate:trigger:burst', $3)`,
    [tenantId, perMinute, burst],
  );
}

export async function insertNotificationType(
  app: TestApp,
  tenantId: string,
  input: {
    key: string;
    channels?: Record<string, boolean>;
    optOut?: boolean;
    variables?: Array<{ name: string; required: boolean }>;
    deleted?: boolean;
  },
): Promise<void> {
  await execute(
    app.runtime.orm.em.fork(),
    `INSERT INTO notification_types (id, tenant_id, key, name, channel_defaults, opt_out, variables, deleted_at)
     VALUES ($1, $2, $3, $3, $4, $5, $6, CASE WHEN $7 THEN now() END)`,
    [
      newId(),
      tenantId,
      input.key,
      JSON.stringify(input.channels ?? { inbox: true, email: false, push: false, web_push: false }),
      input.optOut ?? true,
      JSON.stringify(input.variables ?? []),
      input.deleted ?? false,
    ],
  );
}

/** An inbox template written by SQL (for tests of other routes). */
export async function insertInboxTemplate(
  app: TestApp,
  tenantId: string,
  input: { type: string; title: string; content: string; brand?: string; language?: string; actionUrl?: string },
): Promise<void> {
  await execute(
    app.runtime.orm.em.fork(),
    `INSERT INTO inbox_templates (id, tenant_id, notification_type_key, brand_key, language, title, content, action_url)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      newId(),
      tenantId,
      input.type,
      input.brand ?? 'default',
      input.language ?? 'en',
      input.title,
      input.content,
      input.actionUrl ?? null,
    ],
  );
}

export async function insertEmailTemplate(
  app: TestApp,
  tenantId: string,
  input: { type: string; subject: string; content: string; brand?: string; language?: string },
): Promise<void> {
  await execute(
    app.runtime.orm.em.fork(),
    `INSERT INTO email_templates (id, tenant_id, notification_type_key, brand_key, language, subject, content)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [newId(), tenantId, input.type, input.brand ?? 'default', input.language ?? 'en', input.subject, input.content],
  );
}

/**
 * Stores an inbox item (its own 'notification' on the contact's stream) as the delivery worker's
 * inbox channel does. `app` may be any process of the install.
 */
export async function deliverInboxItem(
  app: TestApp,
  tenantId: string,
  contactId: string,
  fields: { title?: string; body?: string; type?: string; data?: Record<string, unknown> } = {},
): Promise<InboxItemResponse> {
  const row = await storeInboxItem(app.runtime.orm.em.fork(), {
    id: newId(),
    tenant_id: tenantId,
    contact_id: contactId,
    event_id: null,
    delivery_id: null,
    type_key: fields.type ?? 'order_shipped',
    title: fields.title ?? 'Shipped',
    body: fields.body ?? 'Your order shipped',
    action_url: null,
    data: fields.data ?? {},
  });
  return toInboxItemResponse(row!);
}

/** The delivery jobs carrying any of the events (in job id order), with the events each carries. */
export function deliveryJobsOf(
  app: TestApp,
  eventIds: string[],
): Promise<Array<{ id: string; state: string; retry_count: number; event_ids: string[] }>> {
  return sql(
    app,
    `SELECT id::text, state, retry_count,
            CASE WHEN data ? 'event_ids' THEN ARRAY(SELECT jsonb_array_elements_text(data->'event_ids')) ELSE ARRAY[data->>'event_id'] END AS event_ids
       FROM pgboss.job
      WHERE name = 'deliver-event' AND (data->'event_ids' ?| $1::text[] OR data->>'event_id' = ANY($1::text[]))
      ORDER BY id`,
    [eventIds],
  );
}

/** Polls until every given event has a final status (the workers run in the test app or a subprocess). */
export async function waitForFinal(
  app: TestApp,
  eventIds: string[],
  timeoutMs = 20_000,
): Promise<Array<{ id: string; status: string }>> {
  return eventually(
    async () => {
      const rows = await sql<{ id: string; status: string }>(
        app,
        `SELECT id::text, status FROM events WHERE id = ANY($1::uuid[])`,
        [eventIds],
      );
      const pending =
        eventIds.length - rows.filter((r) => !['scheduled', 'queued', 'processing'].includes(r.status)).length;
      if (pending > 0) throw new Error(`${pending} pending`);
      return rows;
    },
    { timeoutMs, message: `events not final after ${timeoutMs} ms` },
  );
}

/** The jobs of `queue` that are active now (say, those a killed worker held), with their attempt. */
export async function activeJobs(app: TestApp, queue: string): Promise<Array<{ id: string; retry_count: number }>> {
  return sql(app, `SELECT id::text, retry_count FROM pgboss.job WHERE name = $1 AND state = 'active'`, [queue]);
}

/** Waits until none of `jobs` is still active in the attempt it was in: the lost-job check handed it back. */
export async function untilHandedBack(
  app: TestApp,
  queue: string,
  jobs: Array<{ id: string; retry_count: number }>,
  timeoutMs = 20_000,
): Promise<void> {
  await eventually(
    async () => {
      const still = await sql(
        app,
        `SELECT j.id FROM pgboss.job j JOIN unnest($2::uuid[], $3::int[]) AS held(id, retry_count) ON j.id = held.id AND j.retry_count = held.retry_count
          WHERE j.name = $1 AND j.state = 'active'`,
        [queue, jobs.map((j) => j.id), jobs.map((j) => j.retry_count)],
      );
      return still.length === 0;
    },
    {
      timeoutMs,
      intervalMs: 100,
      message: `the dead worker's ${queue} jobs were not handed back within ${timeoutMs} ms`,
    },
  );
}

/* ---------------------------------------------------------------- SQL */

export async function sql<T = Record<string, unknown>>(
  app: TestApp,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  return query<T>(app.runtime.orm.em.fork(), text, params);
}

export async function sqlOne<T = Record<string, unknown>>(
  app: TestApp,
  text: string,
  params: unknown[] = [],
): Promise<T | undefined> {
  return queryOne<T>(app.runtime.orm.em.fork(), text, params);
}

/** Resolves once a session of the test database waits on a row lock (a write that another open transaction holds back). */
export async function untilLockWait(app: TestApp, timeoutMs = 30_000): Promise<void> {
  await eventually(
    async () => {
      const waiting = await sqlOne<{ n: number }>(
        app,
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
      );
      return waiting!.n > 0;
    },
    { timeoutMs, intervalMs: 10, message: `no session waited on a lock within ${timeoutMs} ms` },
  );
}

/* ---------------------------------------------------------------- shared assertions */

/** A management route refuses a missing credential (401), a contact token and a non-member's token (403). */
export async function expectManagementOnly(
  app: TestApp,
  fx: TenantFixture,
  method: string,
  path: string,
  body?: unknown,
): Promise<void> {
  const none = await app.request(method, path, { body });
  expect(none.status).toBe(401);
  expect(none.body.code).toBe('unauthorized');
  const contact = await app.request(method, path, { body, token: fx.contactToken });
  expect(contact.status).toBe(403);
  expect(contact.body.code).toBe('wrong_credential_kind');
  const outsider = await app.request(method, path, { body, token: await outsiderToken(app, fx.tenantId) });
  expect(outsider.status).toBe(403);
  expect(outsider.body.code).toBe('not_a_member');
}

/** One user per app who belongs to no tenant, signed in to the given one anyway. */
const outsiders = new WeakMap<TestApp, Promise<SignedUp>>();
async function outsiderToken(app: TestApp, tenantId: string): Promise<string> {
  if (!outsiders.has(app)) outsiders.set(app, addUser(app, null));
  const outsider = await outsiders.get(app)!;
  return app.runtime.tokens.sign('access', outsider.userId, tenantId, 3600, app.runtime.clock.now());
}

/** A 422 HTTPValidationError with an entry at `loc`. */
export function expectValidationError(res: { status: number; body: any }, loc: Array<string | number>): void {
  expect(res.status).toBe(422);
  expect(Array.isArray(res.body.detail)).toBe(true);
  const locs = res.body.detail.map((d: { loc: unknown[] }) => JSON.stringify(d.loc));
  expect(locs).toContain(JSON.stringify(loc));
  for (const entry of res.body.detail)
    expect(entry).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
}

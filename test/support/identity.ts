// Helpers for identity tests: distinct client addresses (through a trusted proxy, so per-IP buckets do
// not collide between tests), sign-up + sign-in, and reading link tokens out of received emails.
import { expect } from 'vitest';
import type { TestApp, RequestOptions, TestResponse } from './app.ts';
import type { ReceivedMail, SmtpPeer } from './smtp-peer.ts';
import { createUser } from '../../server/services/users.ts';
import { query } from '../../server/db/sql.ts';

let counter = 0;
/** A fresh client address, sent as X-Forwarded-For (tests run with trustedProxies: ['127.0.0.1']). */
export function freshIp(): string {
  counter++;
  return `10.${(counter >> 16) & 255}.${(counter >> 8) & 255}.${counter & 255}`;
}

/** A request from a fresh client address (rate limits per IP do not carry over). */
export function requestAs(app: TestApp, method: string, path: string, options: RequestOptions = {}, ip = freshIp()): Promise<TestResponse> {
  return app.request(method, path, { ...options, headers: { ...options.headers, 'x-forwarded-for': ip } });
}

let emailCounter = 0;
export function uniqueEmail(prefix = 'user'): string {
  emailCounter++;
  return `${prefix}${emailCounter}.${Math.random().toString(36).slice(2, 8)}@example.test`;
}

export const PASSWORD = 'correct horse battery staple';

export interface SignedUp {
  email: string;
  password: string;
  userId: string;
  tenantId: string;
  token: string;
}

/** Registers through the API (multi mode) and signs in. */
export async function signUp(app: TestApp, options: { email?: string; password?: string; tenantName?: string } = {}): Promise<SignedUp> {
  const email = options.email ?? uniqueEmail();
  const password = options.password ?? PASSWORD;
  const reg = await requestAs(app, 'POST', '/v1/auth/register', { body: { email, password, tenant_name: options.tenantName ?? 'Acme' } });
  expect(reg.status).toBe(201);
  const login = await requestAs(app, 'POST', '/v1/auth/login', { body: { email, password } });
  expect(login.status).toBe(200);
  return { email, password, userId: reg.body.id, tenantId: login.body.tenant_id, token: login.body.access_token };
}

/** A user created directly (verified, no membership) and, if given, added to a tenant with a role. */
export async function addUser(app: TestApp, tenantId: string | null, role: 'owner' | 'admin' = 'admin', isDefault = false): Promise<SignedUp> {
  const email = uniqueEmail('member');
  const em = app.runtime.orm.em.fork();
  const user = await createUser(em, { email, password: PASSWORD, verified: true });
  if (tenantId) {
    await query(em, `INSERT INTO memberships (user_id, tenant_id, role, is_default) VALUES ($1, $2, $3, $4)`, [user.id, tenantId, role, isDefault]);
  }
  const token = tenantId ? app.runtime.tokens.sign('access', user.id, tenantId, 3600, app.runtime.clock.now()) : '';
  return { email, password: PASSWORD, userId: user.id, tenantId: tenantId ?? '', token };
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
  return smtp.waitFor((m) => m.envelope.to.includes(to) && subject.test(m.parsed.subject ?? '') && smtp.messages.indexOf(m) >= after);
}

/** Waits until the queue has no pending email-link or system-email jobs (so "no mail was sent" can be asserted). */
export async function drainSystemEmails(app: TestApp): Promise<void> {
  const em = app.runtime.orm.em.fork();
  for (let i = 0; i < 200; i++) {
    const rows = await query<{ n: number }>(em, `SELECT count(*)::int AS n FROM pgboss.job WHERE name IN ('email-link-request', 'system-email') AND state IN ('created', 'retry', 'active')`);
    if (rows[0]!.n === 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('system emails did not drain');
}

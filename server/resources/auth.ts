// Sign-up, sign-in and recovery: registration, login (stateless access tokens), email verification and
// password reset. Anti-enumeration: resend and reset only enqueue a job (the lookup and the mail happen
// after the response, whatever the address); a login miss still runs one argon2id verification.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { execute, query, queryOne } from '../base/db/sql.ts';
import type { Context } from '../base/context.ts';
import { dummyPasswordHash, hashPassword, verifyPassword } from '../base/auth/passwords.ts';
import { hashLinkToken, newLinkToken } from '../base/auth/link-tokens.ts';
import { enqueueSystemEmail } from '../channels/email/system-email-queue.ts';
import { createTenant } from './tenants.ts';
import { findUserByEmail, type UserRow } from './users.ts';
import { toIsoTimestamp } from '../base/timestamps.ts';

export interface UserResponseBody {
  id: string;
  email: string;
  email_verified: boolean;
  created_at: string;
}

export interface AccessTokenBody {
  access_token: string;
  token_type: 'bearer';
  expires_in: number;
  tenant_id: string;
  /** Present (true) when the tenant requires a second factor the user has not set up yet. */
  mfa_enrolment_required?: boolean;
}

const INSERT_USER = `INSERT INTO users (id, email, password_hash) VALUES ($1, lower($2), $3)
       ON CONFLICT (lower(email)) DO NOTHING
       RETURNING id, email, password_hash, email_verified_at, created_at`;

const INSERT_EMAIL_TOKEN = `INSERT INTO email_tokens (id, purpose, token_hash, user_id, expires_at, created_at)
  VALUES ($1, $2, $3, $4, $5, $6)`;

const FIND_LOGIN_TENANT = `SELECT tenant_id FROM memberships WHERE user_id = $1
  ORDER BY is_default DESC, created_at, tenant_id LIMIT 1`;

const LOCK_EMAIL_TOKEN = `SELECT id, user_id, expires_at, consumed_at FROM email_tokens
  WHERE token_hash = $1 AND purpose = $2 FOR UPDATE`;

const CONSUME_EMAIL_TOKEN = `UPDATE email_tokens SET consumed_at = $2 WHERE id = $1`;

const MARK_EMAIL_VERIFIED = `UPDATE users SET email_verified_at = coalesce(email_verified_at, $2), updated_at = now()
  WHERE id = $1`;

const FIND_RECENT_EMAIL_TOKEN = `SELECT 1 FROM email_tokens WHERE user_id = $1 AND purpose = $2 AND created_at > $3
  LIMIT 1`;

const LOCK_USER_BY_EMAIL = `SELECT id, email, email_verified_at FROM users WHERE lower(email) = lower($1) FOR UPDATE`;

const RETIRE_RESET_TOKENS = `UPDATE email_tokens SET consumed_at = $2
  WHERE user_id = $1 AND purpose = 'reset' AND consumed_at IS NULL`;

const FIND_USABLE_RESET_TOKEN = `SELECT 1 FROM email_tokens
  WHERE token_hash = $1 AND purpose = 'reset' AND consumed_at IS NULL AND expires_at > $2`;

const FIND_USER_EMAIL = `SELECT email FROM users WHERE id = $1`;

const SET_PASSWORD = `UPDATE users SET password_hash = $2, email_verified_at = coalesce(email_verified_at, $3),
  updated_at = now() WHERE id = $1`;

export function toUserResponse(
  user: Pick<UserRow, 'id' | 'email' | 'email_verified_at' | 'created_at'>,
): UserResponseBody {
  return {
    id: user.id,
    email: user.email,
    email_verified: user.email_verified_at !== null,
    created_at: toIsoTimestamp(user.created_at),
  };
}

/** A stateless access token for `userId` scoped to `tenantId` (valid until it expires; a reset does not revoke it). */
export function issueAccessToken(runtime: Context, userId: string, tenantId: string): AccessTokenBody {
  const ttl = runtime.config.accessTokenTtlSeconds;
  return {
    access_token: runtime.tokens.sign('access', userId, tenantId, ttl, runtime.clock.now()),
    token_type: 'bearer',
    expires_in: ttl,
    tenant_id: tenantId,
  };
}

const nowDate = (runtime: Context) => new Date(runtime.clock.now());

/**
 * Multi-tenant sign-up: the user (unverified), their tenant, the owner membership (their default), the
 * default brand and the verification email, in one transaction.
 */
export async function register(
  runtime: Context,
  em: EntityManager,
  input: { email: string; password: string; tenantName: string },
): Promise<UserResponseBody> {
  if (runtime.config.mode === 'single')
    throw new AppError('signup_closed', 'Sign-up is closed on this single-tenant install');
  // Hash before looking the address up, so a taken address answers no faster than a free one.
  const passwordHash = await hashPassword(input.password);
  return em.transactional(async (tx) => {
    const user = await queryOne<UserRow>(tx, INSERT_USER, [newId(), input.email, passwordHash]);
    if (!user) throw new AppError('email_taken', 'This email address is already registered');
    await createTenant(tx, { name: input.tenantName, ownerUserId: user.id, makeDefault: true });
    await issueEmailLink(runtime, tx, user, 'verify', runtime.clock.now());
    return toUserResponse(user);
  });
}

/** Creates a verification or reset link for `user` and enqueues its email in the same transaction. */
async function issueEmailLink(
  runtime: Context,
  tx: EntityManager,
  user: Pick<UserRow, 'id' | 'email'>,
  purpose: 'verify' | 'reset',
  nowMs: number,
): Promise<void> {
  const link = newLinkToken();
  const ttl = purpose === 'verify' ? runtime.config.verificationLinkTtlSeconds : runtime.config.resetLinkTtlSeconds;
  await query(tx, INSERT_EMAIL_TOKEN, [
    newId(),
    purpose,
    link.hash,
    user.id,
    new Date(nowMs + ttl * 1000),
    new Date(nowMs),
  ]);
  await enqueueSystemEmail(runtime, tx, { kind: purpose, to: user.email, token: link.token });
}

/** The tenant a login lands in: the default membership, else the oldest one (self-healing), else none. */
export async function defaultTenantOf(em: EntityManager, userId: string): Promise<string | null> {
  const row = await queryOne<{ tenant_id: string }>(em, FIND_LOGIN_TENANT, [userId]);
  return row?.tenant_id ?? null;
}

/**
 * The password step of a sign-in: the user and the tenant they land in (401 for a wrong email or
 * password, 403 for a user of no tenant). The sign-in ends in resources/mfa.ts, which asks for the
 * user's second factor where they have one.
 */
export async function checkLogin(
  em: EntityManager,
  input: { email: string; password: string },
): Promise<{ userId: string; tenantId: string }> {
  const user = await findUserByEmail(em, input.email);
  // A miss verifies against a dummy hash: the answer takes as long as for a wrong password.
  const ok = await verifyPassword(user?.password_hash ?? (await dummyPasswordHash()), input.password);
  if (!user || !ok) throw new AppError('invalid_credentials', 'Invalid email or password');
  const tenantId = await defaultTenantOf(em, user.id);
  // Only reachable with the right password, so it reveals nothing to a guesser.
  if (!tenantId)
    throw new AppError(
      'not_a_member',
      'This account is not a member of any tenant any more; ask an owner for an invitation',
    );
  return { userId: user.id, tenantId };
}

interface EmailTokenRow {
  id: string;
  user_id: string;
  expires_at: Date;
  consumed_at: Date | null;
}

/**
 * Consumes a link token of `purpose` inside `tx`: 422 invalid_link for an unknown or spent token,
 * 422 link_expired after its lifetime. The row is locked so two uses race to one winner.
 */
async function consumeEmailToken(
  runtime: Context,
  tx: EntityManager,
  purpose: 'verify' | 'reset',
  token: string,
  check?: (row: EmailTokenRow) => Promise<void>,
): Promise<EmailTokenRow> {
  const row = await queryOne<EmailTokenRow>(tx, LOCK_EMAIL_TOKEN, [hashLinkToken(token), purpose]);
  if (!row || row.consumed_at !== null)
    throw new AppError('invalid_link', 'This link is invalid or has already been used');
  if (new Date(row.expires_at).getTime() <= runtime.clock.now())
    throw new AppError('link_expired', 'This link has expired; ask for a new one');
  if (check) await check(row);
  await execute(tx, CONSUME_EMAIL_TOKEN, [row.id, nowDate(runtime)]);
  return row;
}

export async function verifyEmail(runtime: Context, em: EntityManager, token: string): Promise<void> {
  await em.transactional(async (tx) => {
    const row = await consumeEmailToken(runtime, tx, 'verify', token);
    await execute(tx, MARK_EMAIL_VERIFIED, [row.user_id, nowDate(runtime)]);
  });
}

/**
 * Resend-verification and password-reset answer before anything is looked up: the route only enqueues
 * this request (the same work whether or not the address has an account), and the email-link job
 * decides, after the response, whether a link is issued. The request time travels with the job, so
 * the cooldown and the link's lifetime count from the request.
 */
export async function requestEmailLink(runtime: Context, purpose: 'verify' | 'reset', email: string): Promise<void> {
  if (!runtime.boss) throw new AppError('service_unavailable', 'The job queue is not running; try again shortly');
  await runtime.boss.send(EMAIL_LINK_JOB, {
    purpose,
    email,
    requested_at: runtime.clock.now(),
  } satisfies EmailLinkRequest);
}

export const EMAIL_LINK_JOB = 'email-link-request';

export interface EmailLinkRequest {
  purpose: 'verify' | 'reset';
  email: string;
  /** Milliseconds since the epoch, from the runtime clock at request time. */
  requested_at: number;
}

/**
 * True when a link of `purpose` was issued to the user within the cooldown: a re-request then is a
 * silent no-op (the first email is on its way; this stops mail-bombing an address).
 */
async function inCooldown(
  runtime: Context,
  tx: EntityManager,
  userId: string,
  purpose: 'verify' | 'reset',
  nowMs: number,
): Promise<boolean> {
  const since = new Date(nowMs - runtime.config.resetCooldownSeconds * 1000);
  const row = await queryOne(tx, FIND_RECENT_EMAIL_TOKEN, [userId, purpose, since]);
  return row !== undefined;
}

/**
 * The email-link job's decision: a verification link only for an existing, unverified user; a reset
 * link for any existing user (earlier unused reset links are retired, so only the newest works);
 * nothing inside the cooldown. A retried job finds the link it already issued and does nothing.
 */
export async function fulfilEmailLinkRequest(
  runtime: Context,
  em: EntityManager,
  request: EmailLinkRequest,
): Promise<void> {
  await em.transactional(async (tx) => {
    const user = await queryOne<UserRow>(tx, LOCK_USER_BY_EMAIL, [request.email]);
    if (!user) return;
    if (request.purpose === 'verify' && user.email_verified_at !== null) return;
    if (await inCooldown(runtime, tx, user.id, request.purpose, request.requested_at)) return;
    if (request.purpose === 'reset') {
      await execute(tx, RETIRE_RESET_TOKENS, [user.id, new Date(request.requested_at)]);
    }
    await issueEmailLink(runtime, tx, user, request.purpose, request.requested_at);
  });
}

/** Whether a reset link can still be used: unknown, spent and expired tokens all answer false. */
export async function resetTokenValid(runtime: Context, em: EntityManager, token: string): Promise<boolean> {
  const row = await queryOne(em, FIND_USABLE_RESET_TOKEN, [hashLinkToken(token), nowDate(runtime)]);
  return row !== undefined;
}

/**
 * Sets a new password through a reset link. Refuses (422 weak_password, link kept) a password that
 * contains the local part of the account's email. Receiving the link proves the mailbox, so the
 * address counts as verified afterwards. Access tokens already issued stay valid until they expire.
 */
export async function confirmPasswordReset(
  runtime: Context,
  em: EntityManager,
  input: { token: string; password: string },
): Promise<void> {
  const passwordHash = await hashPassword(input.password);
  await em.transactional(async (tx) => {
    const row = await consumeEmailToken(runtime, tx, 'reset', input.token, async (link) => {
      const user = await queryOne<{ email: string }>(tx, FIND_USER_EMAIL, [link.user_id]);
      if (user && passwordContainsLocalPart(input.password, user.email)) {
        throw new AppError('weak_password', 'The password must not contain your email address');
      }
    });
    await execute(tx, SET_PASSWORD, [row.user_id, passwordHash, nowDate(runtime)]);
  });
}

export function passwordContainsLocalPart(password: string, email: string): boolean {
  const local = email.split('@')[0]!.toLowerCase();
  return local.length >= 3 && password.toLowerCase().includes(local);
}

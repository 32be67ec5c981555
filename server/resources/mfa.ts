// Console users' second factor: TOTP enrolment (the secret encrypted with the key ring, counting only
// once confirmed with a code), ten single-use recovery codes stored as hashes, the sign-in's second
// step, removal (by the user with a current code, or by the host operator), and what a sign-in
// answers: a token, or a short-lived single-use mfa_token when the user has a factor. A code is
// accepted once: its time step (and every earlier one) is refused afterwards.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, invalidField } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { execute, query, queryOne } from '../base/db/sql.ts';
import type { Context } from '../base/context.ts';
import { publicBaseUrl } from '../base/config.ts';
import { mfaSecretAad } from '../base/crypto/aad.ts';
import { hashLinkToken, newLinkToken } from '../base/auth/link-tokens.ts';
import { membershipOf } from '../base/auth/authenticate.ts';
import { hashRecoveryCode, matchingTotpStep, newRecoveryCode, newTotpSecret, totpUri } from '../base/auth/totp.ts';
import { toIsoTimestamp } from '../base/timestamps.ts';
import { issueAccessToken, type AccessTokenBody } from './auth.ts';
import { findUserByEmail, type UserRow } from './users.ts';

export const RECOVERY_CODE_COUNT = 10;
/** How long the second step of a sign-in may take. */
export const MFA_CHALLENGE_TTL_SECONDS = 300;
/** Wrong codes one mfa_token takes before it is spent (the per-user rate limit bounds them further). */
const CHALLENGE_ATTEMPTS = 5;

export interface MfaChallengeBody {
  mfa_required: true;
  mfa_token: string;
  expires_in: number;
}

/** A proof of the factor: the authenticator's current code, or one of the recovery codes. */
export type MfaProof = { code: string; recoveryCode?: undefined } | { code?: undefined; recoveryCode: string };

interface FactorRow {
  id: string;
  secret_ciphertext: string;
  confirmed_at: Date | null;
  /** bigint: read as a string. */
  last_used_step: string | null;
}

const FIND_USER_EMAIL = `SELECT email FROM users WHERE id = $1`;

// An enrolment replaces one still pending, never a confirmed factor (then nothing is returned).
const UPSERT_PENDING_FACTOR = `INSERT INTO mfa_factors (id, user_id, kind, secret_ciphertext, created_at)
  VALUES ($1, $2, 'totp', $3, $4)
  ON CONFLICT (user_id, kind) DO UPDATE
     SET id = EXCLUDED.id, secret_ciphertext = EXCLUDED.secret_ciphertext, created_at = EXCLUDED.created_at
   WHERE mfa_factors.confirmed_at IS NULL
  RETURNING id`;

const FIND_FACTOR = `SELECT id, secret_ciphertext, confirmed_at, last_used_step FROM mfa_factors
  WHERE user_id = $1 AND kind = 'totp'`;

const LOCK_FACTOR = `${FIND_FACTOR} FOR UPDATE`;

const HAS_CONFIRMED_FACTOR = `SELECT 1 FROM mfa_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL`;

const CONFIRM_FACTOR = `UPDATE mfa_factors SET confirmed_at = $2, last_used_step = $3 WHERE id = $1`;

// Guarded, so of two requests with one code only one moves the step on.
const USE_STEP = `UPDATE mfa_factors SET last_used_step = $2
  WHERE id = $1 AND (last_used_step IS NULL OR last_used_step < $2) RETURNING id`;

const DELETE_FACTORS = `DELETE FROM mfa_factors WHERE user_id = $1 RETURNING confirmed_at`;

const DELETE_RECOVERY_CODES = `DELETE FROM mfa_recovery_codes WHERE user_id = $1`;

const INSERT_RECOVERY_CODES = `INSERT INTO mfa_recovery_codes (user_id, code_hash)
  SELECT $1, unnest($2::bytea[])`;

const USE_RECOVERY_CODE = `UPDATE mfa_recovery_codes SET used_at = $3
  WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL RETURNING user_id`;

const COUNT_RECOVERY_CODES = `SELECT count(*)::int AS n FROM mfa_recovery_codes WHERE user_id = $1 AND used_at IS NULL`;

const TENANT_REQUIRES_MFA = `SELECT require_mfa FROM tenants WHERE id = $1`;

const DELETE_EXPIRED_CHALLENGES = `DELETE FROM mfa_challenges WHERE expires_at < $1`;

const INSERT_CHALLENGE = `INSERT INTO mfa_challenges (token_hash, user_id, tenant_id, expires_at) VALUES ($1, $2, $3, $4)`;

const FIND_CHALLENGE_USER = `SELECT user_id FROM mfa_challenges WHERE token_hash = $1`;

const LOCK_CHALLENGE = `SELECT user_id, tenant_id, expires_at, failed_attempts FROM mfa_challenges
  WHERE token_hash = $1 FOR UPDATE`;

const DELETE_CHALLENGE = `DELETE FROM mfa_challenges WHERE token_hash = $1`;

const COUNT_FAILED_ATTEMPT = `UPDATE mfa_challenges SET failed_attempts = failed_attempts + 1 WHERE token_hash = $1`;

const DELETE_USER_CHALLENGES = `DELETE FROM mfa_challenges WHERE user_id = $1`;

const nowDate = (runtime: Context) => new Date(runtime.clock.now());

/** How an authenticator app names the account: the install's host and the user's email. */
function issuerOf(runtime: Context): string {
  return `Herald ${new URL(publicBaseUrl(runtime.config)).hostname}`;
}

function secretOf(runtime: Context, factor: FactorRow): Buffer {
  return Buffer.from(runtime.keyRing.decrypt(factor.secret_ciphertext, mfaSecretAad(factor.id)), 'base64');
}

/** Whether the user has a confirmed second factor. */
export async function hasSecondFactor(em: EntityManager, userId: string): Promise<boolean> {
  return (await queryOne(em, HAS_CONFIRMED_FACTOR, [userId])) !== undefined;
}

/**
 * An access token for the user in the tenant, saying when the tenant requires a second factor the
 * user has not set up: the token then opens only the enrolment routes until they have.
 */
export async function sessionTokenFor(
  runtime: Context,
  em: EntityManager,
  userId: string,
  tenantId: string,
): Promise<AccessTokenBody> {
  const token = issueAccessToken(runtime, userId, tenantId);
  const { mfaEnrolmentRequired } = await membershipOf(em, userId, tenantId);
  return mfaEnrolmentRequired ? { ...token, mfa_enrolment_required: true } : token;
}

/**
 * Where every sign-in of an identified user ends (password login, single sign-on): the access token
 * for `tenantId`, or, when the user has a second factor, the step that asks for it (an mfa_token for
 * POST /v1/auth/mfa/verify, bound to the user and the tenant, single use, five minutes).
 */
export async function signInOrAskForSecondFactor(
  runtime: Context,
  em: EntityManager,
  userId: string,
  tenantId: string,
): Promise<AccessTokenBody | MfaChallengeBody> {
  if (!(await hasSecondFactor(em, userId))) return sessionTokenFor(runtime, em, userId, tenantId);
  const nowMs = runtime.clock.now();
  const challenge = newLinkToken();
  await execute(em, DELETE_EXPIRED_CHALLENGES, [new Date(nowMs)]);
  await execute(em, INSERT_CHALLENGE, [
    challenge.hash,
    userId,
    tenantId,
    new Date(nowMs + MFA_CHALLENGE_TTL_SECONDS * 1000),
  ]);
  return { mfa_required: true, mfa_token: challenge.token, expires_in: MFA_CHALLENGE_TTL_SECONDS };
}

/** What the per-user rate limit of the second step counts: the mfa_token's user (else the token itself). */
export async function challengeRateSubject(em: EntityManager, mfaToken: string): Promise<string> {
  const hash = hashLinkToken(mfaToken);
  const row = await queryOne<{ user_id: string }>(em, FIND_CHALLENGE_USER, [hash]);
  return row?.user_id ?? hash.toString('hex');
}

/**
 * Accepts a proof of the user's factor (locked by the caller): a code of a step later than the last
 * one used (which it records), or an unused recovery code (which it spends). Null when refused.
 */
async function acceptProof(
  runtime: Context,
  tx: EntityManager,
  userId: string,
  factor: FactorRow,
  proof: MfaProof,
): Promise<'code' | 'recovery_code' | null> {
  if (proof.recoveryCode !== undefined) {
    const used = await queryOne(tx, USE_RECOVERY_CODE, [
      userId,
      hashRecoveryCode(proof.recoveryCode),
      nowDate(runtime),
    ]);
    return used ? 'recovery_code' : null;
  }
  const step = matchingTotpStep(secretOf(runtime, factor), proof.code, runtime.clock.now());
  if (step === null) return null;
  if (factor.last_used_step !== null && step <= Number(factor.last_used_step)) return null;
  return (await queryOne(tx, USE_STEP, [factor.id, step])) ? 'code' : null;
}

/**
 * The sign-in's second step: a valid mfa_token and a proof of the factor answer the access token for
 * the tenant the sign-in was for, and spend the token. A wrong code counts against the token (spent
 * after five) and answers 401 invalid_mfa_code; an unknown, expired or spent token 401 invalid_mfa_token.
 */
export async function verifySecondFactor(
  runtime: Context,
  em: EntityManager,
  input: { mfaToken: string } & MfaProof,
): Promise<AccessTokenBody> {
  const hash = hashLinkToken(input.mfaToken);
  const outcome = await em.transactional(async (tx): Promise<AccessTokenBody | 'invalid_token' | 'invalid_code'> => {
    const challenge = await queryOne<{
      user_id: string;
      tenant_id: string;
      expires_at: Date;
      failed_attempts: number;
    }>(tx, LOCK_CHALLENGE, [hash]);
    if (!challenge || new Date(challenge.expires_at).getTime() <= runtime.clock.now()) return 'invalid_token';
    const factor = await queryOne<FactorRow>(tx, LOCK_FACTOR, [challenge.user_id]);
    // The factor was removed since the password step: the sign-in starts again.
    if (!factor?.confirmed_at) {
      await execute(tx, DELETE_CHALLENGE, [hash]);
      return 'invalid_token';
    }
    const proof: MfaProof =
      input.recoveryCode !== undefined ? { recoveryCode: input.recoveryCode } : { code: input.code };
    if (!(await acceptProof(runtime, tx, challenge.user_id, factor, proof))) {
      // Counted in a transaction that commits: the refusal is thrown after it.
      await execute(tx, challenge.failed_attempts + 1 >= CHALLENGE_ATTEMPTS ? DELETE_CHALLENGE : COUNT_FAILED_ATTEMPT, [
        hash,
      ]);
      return 'invalid_code';
    }
    await execute(tx, DELETE_CHALLENGE, [hash]);
    return issueAccessToken(runtime, challenge.user_id, challenge.tenant_id);
  });
  if (outcome === 'invalid_token')
    throw new AppError('invalid_mfa_token', 'This sign-in has expired or was already finished; sign in again');
  if (outcome === 'invalid_code')
    throw new AppError('invalid_mfa_code', 'The code is not valid (or was already used); try the current one');
  return outcome;
}

/**
 * Starts (or restarts) a TOTP enrolment: a new secret, stored encrypted and pending until confirmed,
 * answered once as an otpauth:// URI and its QR code. 409 when the user already has a factor.
 */
export async function startTotpEnrolment(
  runtime: Context,
  em: EntityManager,
  userId: string,
): Promise<{ otpauth_uri: string; qr_svg: string }> {
  const user = await queryOne<{ email: string }>(em, FIND_USER_EMAIL, [userId]);
  if (!user) throw new AppError('not_found', 'User not found');
  const id = newId();
  const secret = newTotpSecret();
  const ciphertext = runtime.keyRing.encrypt(secret.toString('base64'), mfaSecretAad(id));
  const stored = await queryOne(em, UPSERT_PENDING_FACTOR, [id, userId, ciphertext, nowDate(runtime)]);
  if (!stored)
    throw new AppError(
      'mfa_already_enabled',
      'A second factor is set up already; remove it first (POST /v1/auth/mfa/totp/disable) to enrol another',
    );
  const uri = totpUri(issuerOf(runtime), user.email, secret);
  // The QR encoder is loaded by the first enrolment only.
  const { renderSVG } = await import('uqr');
  return { otpauth_uri: uri, qr_svg: renderSVG(uri, { ecc: 'M', border: 4 }) };
}

/**
 * Confirms a pending enrolment with a code from the authenticator: the factor counts from now on (that
 * code's step is spent), and ten new recovery codes are made, answered once and stored as hashes.
 */
export async function confirmTotpEnrolment(
  runtime: Context,
  em: EntityManager,
  userId: string,
  code: string,
): Promise<{ recovery_codes: string[] }> {
  return em.transactional(async (tx) => {
    const factor = await queryOne<FactorRow>(tx, LOCK_FACTOR, [userId]);
    if (!factor)
      throw new AppError('mfa_enrolment_not_started', 'No enrolment to confirm: start one with POST /v1/auth/mfa/totp');
    if (factor.confirmed_at) throw new AppError('mfa_already_enabled', 'This second factor is confirmed already');
    const step = matchingTotpStep(secretOf(runtime, factor), code, runtime.clock.now());
    if (step === null)
      throw invalidField(['body', 'code'], 'is not the current code of the authenticator app', 'code_invalid');
    await execute(tx, CONFIRM_FACTOR, [factor.id, nowDate(runtime), step]);
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await execute(tx, DELETE_RECOVERY_CODES, [userId]);
    await execute(tx, INSERT_RECOVERY_CODES, [userId, codes.map(hashRecoveryCode)]);
    return { recovery_codes: codes };
  });
}

/**
 * Removes the user's own factor, proven by a current code or an unused recovery code (422 on the field
 * otherwise): the factor, its recovery codes and any sign-in waiting for it are gone.
 */
export async function disableTotp(runtime: Context, em: EntityManager, userId: string, proof: MfaProof): Promise<void> {
  await em.transactional(async (tx) => {
    const factor = await queryOne<FactorRow>(tx, LOCK_FACTOR, [userId]);
    if (!factor?.confirmed_at) throw new AppError('mfa_not_enabled', 'There is no second factor to remove');
    if (!(await acceptProof(runtime, tx, userId, factor, proof))) {
      throw proof.recoveryCode !== undefined
        ? invalidField(['body', 'recovery_code'], 'is not an unused recovery code', 'code_invalid')
        : invalidField(['body', 'code'], 'is not the current code of the authenticator app', 'code_invalid');
    }
    await removeFactors(tx, userId);
  });
}

/** Deletes the user's factors, recovery codes and pending second steps; true when a confirmed factor went. */
async function removeFactors(tx: EntityManager, userId: string): Promise<boolean> {
  const removed = await query<{ confirmed_at: Date | null }>(tx, DELETE_FACTORS, [userId]);
  await execute(tx, DELETE_RECOVERY_CODES, [userId]);
  await execute(tx, DELETE_USER_CHALLENGES, [userId]);
  return removed.some((r) => r.confirmed_at !== null);
}

/**
 * herald users mfa reset: the host operator removes a user's second factor (a lost phone and lost
 * recovery codes), so they sign in with their password alone until they enrol again. 404 for no such user.
 */
export async function resetSecondFactor(
  em: EntityManager,
  email: string,
): Promise<{ user: UserRow; removed: boolean }> {
  const user = await findUserByEmail(em, email);
  if (!user) throw new AppError('not_found', `No user with email ${email}`);
  return { user, removed: await removeFactors(em, user.id) };
}

export interface MfaStatusBody {
  totp_enabled: boolean;
  enabled_at: string | null;
  enrolment_pending: boolean;
  recovery_codes_remaining: number;
  required: boolean;
}

/** The user's second factor as the console shows it, and whether the token's tenant requires one. */
export async function secondFactorStatus(em: EntityManager, userId: string, tenantId: string): Promise<MfaStatusBody> {
  const factor = await queryOne<FactorRow>(em, FIND_FACTOR, [userId]);
  const codes = await queryOne<{ n: number }>(em, COUNT_RECOVERY_CODES, [userId]);
  const tenant = await queryOne<{ require_mfa: boolean }>(em, TENANT_REQUIRES_MFA, [tenantId]);
  const confirmed = factor?.confirmed_at ?? null;
  return {
    totp_enabled: confirmed !== null,
    enabled_at: confirmed ? toIsoTimestamp(confirmed) : null,
    enrolment_pending: factor !== undefined && confirmed === null,
    recovery_codes_remaining: confirmed ? (codes?.n ?? 0) : 0,
    required: tenant?.require_mfa ?? false,
  };
}

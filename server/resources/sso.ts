// Single sign-on for console users (arctic's OAuth 2.0 client, authorization code flow with state and
// PKCE). GitHub signs in through its OAuth API (the account id of /user, the primary verified address
// of /user/emails); every other kind is OpenID Connect, its endpoints discovered from the issuer (whose
// discovery document must name that same issuer), with a nonce. Its ID token, where the provider
// issues one, is verified with jose (signature against the issuer's JWKS, iss, aud and azp, exp and
// iat, nonce) and is the source of the subject and the address; userinfo serves only what it lacks.
// An address counts only when the provider says it is verified. The operator configures providers on
// the host (`herald sso add`); their base URLs are configurable, so tests reach local peers.
//
// A sign-in binds its state to the browser that started it: a random value in a short-lived HttpOnly
// cookie (only the SSO paths receive it) whose hash is stored with the state, so a callback URL
// carried to another browser does nothing (no login CSRF). The state row is consumed once.
//
// An account signed in through a provider is linked to the provider's subject (sso_identities), and
// later sign-ins match that subject first: an address that changes hands at the provider does not
// carry its sign-in to the account of the address's former holder.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { OAuth2Client, OAuth2Tokens } from 'arctic';
import type { JWTPayload, JWTVerifyGetKey } from 'jose';
import { AppError } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { execute, query, queryOne, toIsoTimestamp } from '../base/db/sql.ts';
import { publicBaseUrl } from '../base/config.ts';
import type { Context } from '../base/context.ts';
import { defaultTenantOf, type AccessTokenBody } from './auth.ts';
import { signInOrAskForSecondFactor, type MfaChallengeBody } from './mfa.ts';
import { createTenant } from './tenants.ts';
import { createUser, findUserByEmail, type UserRow } from './users.ts';
import { ssoClientSecretAad } from '../base/crypto/aad.ts';

export const SSO_KINDS = ['github', 'gitlab', 'google', 'microsoft', 'okta', 'keycloak', 'oidc'] as const;
export type SsoKind = (typeof SSO_KINDS)[number];

const STATE_TTL_MS = 10 * 60 * 1000;
const FETCH_TIMEOUT_MS = 10_000;
const DISCOVERY_TTL_MS = 10 * 60 * 1000;
/** How far the provider's clock may be from Herald's when exp and iat are checked. */
const ID_TOKEN_CLOCK_TOLERANCE_S = 30;
/** An ID token is issued at the code exchange: one older than a sign-in may last is a replay. */
const ID_TOKEN_MAX_AGE_S = STATE_TTL_MS / 1000;
/**
 * The signatures an ID token may carry: public-key ones only, checked against the issuer's JWKS. An
 * HMAC one (keyed with the client secret) is never taken for the provider's.
 */
const ID_TOKEN_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];
/** OpenID Connect Core 2: a subject is at most 255 ASCII characters. */
const MAX_SUBJECT_LENGTH = 255;
export const SSO_COOKIE = 'herald_sso';
const SSO_COOKIE_PATH = '/v1/auth/sso';

// Issuers that need no --issuer (their well-known public ones).
const DEFAULT_ISSUERS: Partial<Record<SsoKind, string>> = {
  google: 'https://accounts.google.com',
  gitlab: 'https://gitlab.com',
};

export interface SsoProviderInput {
  slug: string;
  kind: SsoKind;
  displayName?: string;
  clientId: string;
  clientSecret: string;
  issuer?: string;
  baseUrl?: string;
  apiUrl?: string;
  allowedDomains: string[];
  tenantId?: string | null;
  defaultRole: 'admin' | 'owner';
}

export interface SsoProviderView {
  id: string;
  slug: string;
  kind: SsoKind;
  display_name: string;
  client_id: string;
  issuer: string | null;
  base_url: string | null;
  api_url: string | null;
  allowed_domains: string[];
  tenant_id: string | null;
  default_role: 'admin' | 'owner';
  created_at: string;
}

interface ProviderRow extends Omit<SsoProviderView, 'created_at'> {
  client_secret_ciphertext: string;
  created_at: Date | string;
}

const KIND_NAMES: Record<SsoKind, string> = {
  github: 'GitHub',
  gitlab: 'GitLab',
  google: 'Google',
  microsoft: 'Microsoft',
  okta: 'Okta',
  keycloak: 'Keycloak',
  oidc: 'OpenID Connect',
};

const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest();
const domainOf = (email: string) => email.split('@')[1] ?? '';

const COLUMNS =
  'id, slug, kind, display_name, client_id, client_secret_ciphertext, issuer, base_url, api_url, allowed_domains, tenant_id, default_role, created_at';

const INSERT_PROVIDER = `INSERT INTO sso_providers
     (id, slug, kind, display_name, client_id, client_secret_ciphertext, issuer, base_url, api_url, allowed_domains,
      tenant_id, default_role)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     ON CONFLICT (slug) DO NOTHING RETURNING ${COLUMNS}`;

const LIST_PROVIDERS = `SELECT ${COLUMNS} FROM sso_providers ORDER BY created_at, slug`;

const DELETE_PROVIDER = `DELETE FROM sso_providers WHERE slug = $1`;

const LIST_PROVIDER_BUTTONS = `SELECT slug, display_name, kind FROM sso_providers ORDER BY created_at, slug`;

const FIND_PROVIDER = `SELECT ${COLUMNS} FROM sso_providers WHERE slug = $1`;

const DELETE_EXPIRED_STATES = `DELETE FROM sso_states WHERE expires_at < $1`;

const INSERT_STATE = `INSERT INTO sso_states (state_hash, provider_id, code_verifier, binding_hash, nonce_hash,
  expires_at) VALUES ($1, $2, $3, $4, $5, $6)`;

const FIND_PROVIDER_TENANT_MEMBERSHIP = `SELECT tenant_id FROM memberships WHERE user_id = $1 AND tenant_id = $2`;

const TAKE_STATE = `DELETE FROM sso_states WHERE state_hash = $1
  RETURNING code_verifier, binding_hash, nonce_hash, expires_at, provider_id`;

const FIND_LINKED_USER = `SELECT u.id, u.email, u.email_verified_at FROM sso_identities i
  JOIN users u ON u.id = i.user_id WHERE i.provider_id = $1 AND i.subject = $2`;

// An account already linked to another subject of the provider keeps that link (the unique
// (user_id, provider_id)): the check after this insert tells the two apart.
const INSERT_IDENTITY = `INSERT INTO sso_identities (provider_id, subject, user_id) VALUES ($1, $2, $3)
  ON CONFLICT DO NOTHING`;

const FIND_IDENTITY = `SELECT 1 FROM sso_identities WHERE provider_id = $1 AND subject = $2 AND user_id = $3`;

const FIND_INSTALL_TENANT = `SELECT id FROM tenants ORDER BY created_at, id LIMIT 1`;

const INSERT_DEFAULT_MEMBERSHIP = `INSERT INTO memberships (user_id, tenant_id, role, is_default)
  VALUES ($1, $2, $3, true)`;

function toSsoProviderView(row: ProviderRow): SsoProviderView {
  const { client_secret_ciphertext: _secret, ...rest } = row;
  return { ...rest, allowed_domains: row.allowed_domains ?? [], created_at: toIsoTimestamp(row.created_at) };
}

export async function addSsoProvider(
  runtime: Context,
  em: EntityManager,
  input: SsoProviderInput,
): Promise<SsoProviderView> {
  const issuer = input.kind === 'github' ? null : (input.issuer ?? DEFAULT_ISSUERS[input.kind] ?? null);
  if (input.kind !== 'github' && !issuer)
    throw new AppError('unprocessable', `A ${KIND_NAMES[input.kind]} provider needs its issuer URL (--issuer)`);
  const id = newId();
  const row = await queryOne<ProviderRow>(em, INSERT_PROVIDER, [
    id,
    input.slug,
    input.kind,
    input.displayName ?? KIND_NAMES[input.kind],
    input.clientId,
    runtime.keyRing.encrypt(input.clientSecret, ssoClientSecretAad(id)),
    issuer?.replace(/\/+$/, '') ?? null,
    input.kind === 'github' ? (input.baseUrl ?? 'https://github.com').replace(/\/+$/, '') : null,
    input.kind === 'github' ? (input.apiUrl ?? 'https://api.github.com').replace(/\/+$/, '') : null,
    input.allowedDomains.map((d) => d.toLowerCase()),
    input.tenantId ?? null,
    input.defaultRole,
  ]);
  if (!row) throw new AppError('already_exists', `An SSO provider named ${input.slug} exists`);
  return toSsoProviderView(row);
}

export async function listSsoProviders(em: EntityManager): Promise<SsoProviderView[]> {
  return (await query<ProviderRow>(em, LIST_PROVIDERS)).map(toSsoProviderView);
}

export async function removeSsoProvider(em: EntityManager, slug: string): Promise<void> {
  if ((await execute(em, DELETE_PROVIDER, [slug])) === 0)
    throw new AppError('not_found', `No SSO provider named ${slug}`);
}

/** What the sign-in page shows: a button per provider. */
export async function publicSsoProviders(
  em: EntityManager,
): Promise<Array<{ slug: string; name: string; kind: SsoKind; start_url: string }>> {
  const rows = await query<{ slug: string; display_name: string; kind: SsoKind }>(em, LIST_PROVIDER_BUTTONS);
  return rows.map((r) => ({
    slug: r.slug,
    name: r.display_name,
    kind: r.kind,
    start_url: `/v1/auth/sso/${r.slug}/start`,
  }));
}

async function providerBySlug(em: EntityManager, slug: string): Promise<ProviderRow> {
  const row = await queryOne<ProviderRow>(em, FIND_PROVIDER, [slug]);
  if (!row) throw new AppError('not_found', `No SSO provider named ${slug}`);
  return row;
}

interface Endpoints {
  authorization: string;
  token: string;
  userinfo: string | null;
  scopes: string[];
  /** OpenID Connect only: the issuers an ID token may name (the discovery document's, which is the configured one). */
  issuers: string[];
  /** OpenID Connect only: the issuer's signing keys (its jwks_uri), fetched and cached by jose; null without one. */
  keys: JWTVerifyGetKey | null;
}

const discovered = new Map<string, { endpoints: Endpoints; until: number }>();
/** One key set per jwks_uri, so its cached keys outlive the discovery document's ten minutes. */
const keySets = new Map<string, JWTVerifyGetKey>();

/**
 * Every request Herald itself makes of a provider (discovery, its keys, userinfo, GitHub's API): no
 * redirects and a deadline. The token request is arctic's own.
 */
function providerFetch(url: string, init: RequestInit = {}): Promise<Response> {
  const deadline = AbortSignal.timeout(FETCH_TIMEOUT_MS);
  const signal = init.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
  return fetch(url, { ...init, redirect: 'error', signal });
}

async function fetchJson(url: string, init: RequestInit = {}): Promise<unknown> {
  const response = await providerFetch(url, init);
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return response.json();
}

/** arctic and jose, loaded on the first sign-in: a process whose install uses no SSO never needs them. */
const loadArctic = () => import('arctic');
const loadJose = () => import('jose');

async function keySetOf(jwksUri: string): Promise<JWTVerifyGetKey> {
  const existing = keySets.get(jwksUri);
  if (existing) return existing;
  const { createRemoteJWKSet, customFetch } = await loadJose();
  const keys = createRemoteJWKSet(new URL(jwksUri), {
    timeoutDuration: FETCH_TIMEOUT_MS,
    [customFetch]: (url: string, init: RequestInit) => providerFetch(url, init),
  });
  keySets.set(jwksUri, keys);
  return keys;
}

async function endpointsOf(runtime: Context, row: ProviderRow): Promise<Endpoints> {
  if (row.kind === 'github') {
    return {
      authorization: `${row.base_url}/login/oauth/authorize`,
      token: `${row.base_url}/login/oauth/access_token`,
      userinfo: null,
      scopes: ['read:user', 'user:email'],
      issuers: [],
      keys: null,
    };
  }
  const cached = discovered.get(row.issuer!);
  if (cached && cached.until > runtime.clock.now()) return cached.endpoints;
  const doc = (await fetchJson(`${row.issuer}/.well-known/openid-configuration`)) as Record<string, unknown>;
  // OpenID Connect Discovery 4.3: the document must name the issuer it was fetched for, or its
  // endpoints and keys may be another issuer's. The configured issuer is kept without a trailing
  // slash, so that is the one difference allowed; ID tokens must then name the document's exact value.
  if (typeof doc.issuer !== 'string' || doc.issuer.replace(/\/+$/, '') !== row.issuer) {
    runtime.logger.warn('sso discovery names another issuer', {
      provider: row.slug,
      configured: row.issuer,
      discovered: typeof doc.issuer === 'string' ? doc.issuer.slice(0, 200) : null,
    });
    throw new SsoFailure('sso_issuer_mismatch', `The discovery document of ${row.issuer} names another issuer`);
  }
  if (typeof doc.authorization_endpoint !== 'string' || typeof doc.token_endpoint !== 'string')
    throw new Error('the discovery document lacks endpoints');
  const endpoints = {
    authorization: doc.authorization_endpoint,
    token: doc.token_endpoint,
    userinfo: typeof doc.userinfo_endpoint === 'string' ? doc.userinfo_endpoint : null,
    scopes: ['openid', 'email', 'profile'],
    // Google documents its ID tokens' iss as either form.
    issuers: row.kind === 'google' ? [doc.issuer, 'accounts.google.com'] : [doc.issuer],
    keys: typeof doc.jwks_uri === 'string' ? await keySetOf(doc.jwks_uri) : null,
  };
  discovered.set(row.issuer!, { endpoints, until: runtime.clock.now() + DISCOVERY_TTL_MS });
  return endpoints;
}

async function clientOf(runtime: Context, row: ProviderRow): Promise<OAuth2Client> {
  const { OAuth2Client } = await loadArctic();
  const secret = runtime.keyRing.decrypt(row.client_secret_ciphertext, ssoClientSecretAad(row.id));
  return new OAuth2Client(row.client_id, secret, `${publicBaseUrl(runtime.config)}/v1/auth/sso/${row.slug}/callback`);
}

/** Starts a sign-in: the provider's authorization URL (state, PKCE S256) and the browser-binding cookie. */
export async function startSso(
  runtime: Context,
  em: EntityManager,
  slug: string,
): Promise<{ location: string; cookie: string }> {
  const row = await providerBySlug(em, slug);
  let endpoints: Endpoints;
  try {
    endpoints = await endpointsOf(runtime, row);
  } catch (error) {
    if (error instanceof SsoFailure) throw error;
    runtime.logger.warn('sso discovery failed', { provider: slug, error: String(error) });
    throw new SsoFailure('sso_failed', 'The sign-in provider cannot be reached right now');
  }
  const { CodeChallengeMethod, generateCodeVerifier, generateState } = await loadArctic();
  const state = generateState();
  const verifier = generateCodeVerifier();
  const binding = randomBytes(32).toString('base64url');
  // The ID token must carry this nonce back (OpenID Connect Core 3.1.2.1): a token issued for another
  // sign-in, or replayed, does not pass for this one. GitHub issues no ID token and is sent none.
  const nonce = randomBytes(32).toString('base64url');
  await execute(em, DELETE_EXPIRED_STATES, [new Date(runtime.clock.now())]);
  await execute(em, INSERT_STATE, [
    sha256(state),
    row.id,
    verifier,
    sha256(binding),
    sha256(nonce),
    new Date(runtime.clock.now() + STATE_TTL_MS),
  ]);
  const url = (await clientOf(runtime, row)).createAuthorizationURLWithPKCE(
    endpoints.authorization,
    state,
    CodeChallengeMethod.S256,
    verifier,
    endpoints.scopes,
  );
  if (row.kind !== 'github') url.searchParams.set('nonce', nonce);
  const secure = publicBaseUrl(runtime.config).startsWith('https://') ? '; Secure' : '';
  return {
    location: url.toString(),
    cookie: `${SSO_COOKIE}=${binding}; Path=${SSO_COOKIE_PATH}; Max-Age=${STATE_TTL_MS / 1000}; HttpOnly; SameSite=Lax${secure}`,
  };
}

/** The cookie that ends a sign-in (sent with every callback answer). */
export function clearSsoCookie(): string {
  return `${SSO_COOKIE}=; Path=${SSO_COOKIE_PATH}; Max-Age=0; HttpOnly; SameSite=Lax`;
}

function cookieValue(header: string | null, name: string): string | null {
  for (const part of (header ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return null;
}

/** A sign-in that cannot finish, with a code the sign-in page explains in words. */
export class SsoFailure extends Error {
  readonly reason:
    | 'sso_state_invalid'
    | 'sso_denied'
    | 'sso_failed'
    | 'sso_issuer_mismatch'
    | 'sso_id_token_invalid'
    | 'sso_identity_mismatch'
    | 'sso_email_unverified'
    | 'sso_not_allowed'
    | 'sso_account_unverified'
    | 'sso_provider_not_for_account'
    | 'not_a_member';
  constructor(reason: SsoFailure['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Who the provider says signed in: its subject, and the address it vouches for (null when it vouches for none). */
interface SsoIdentity {
  subject: string;
  email: string | null;
}

/** The boolean true only: a string "true" is no claim OpenID Connect defines (Entra ID: xms_edov too). */
const vouchesForEmail = (row: ProviderRow, claims: Record<string, unknown>) =>
  claims.email_verified === true || (row.kind === 'microsoft' && claims.xms_edov === true);

function subjectOf(value: unknown): string {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_SUBJECT_LENGTH)
    throw new Error('the provider named no usable subject');
  return value;
}

async function gitHubIdentity(row: ProviderRow, headers: Record<string, string>): Promise<SsoIdentity> {
  const user = (await fetchJson(`${row.api_url}/user`, { headers })) as { id?: unknown } | null;
  const emails = (await fetchJson(`${row.api_url}/user/emails`, { headers })) as Array<{
    email: string;
    primary: boolean;
    verified: boolean;
  }>;
  const primary = Array.isArray(emails) ? emails.find((e) => e.primary && e.verified === true) : undefined;
  return {
    subject: subjectOf(user?.id),
    email: typeof primary?.email === 'string' ? primary.email.toLowerCase() : null,
  };
}

/** The jose error codes that mean the ID token itself is wrong (the others: its keys could not be had). */
const BAD_ID_TOKEN_CODES = new Set([
  'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
  'ERR_JWS_INVALID',
  'ERR_JWT_INVALID',
  'ERR_JWT_EXPIRED',
  'ERR_JWT_CLAIM_VALIDATION_FAILED',
  'ERR_JOSE_ALG_NOT_ALLOWED',
  'ERR_JOSE_NOT_SUPPORTED',
  'ERR_JWKS_NO_MATCHING_KEY',
  'ERR_JWKS_MULTIPLE_MATCHING_KEYS',
]);

/**
 * The ID token's claims once it holds (OpenID Connect Core 3.1.3.7): signed by a key of the issuer's
 * JWKS, issued by the configured issuer, for this client (and, among several audiences, authorized
 * for it), current, and carrying this sign-in's nonce. A refusal names the check that failed, never
 * the token.
 */
async function verifiedIdToken(
  runtime: Context,
  row: ProviderRow,
  endpoints: Endpoints,
  idToken: string,
  nonceHash: Buffer,
): Promise<JWTPayload> {
  const refuse = (problem: string) => {
    runtime.logger.warn('sso id token refused', { provider: row.slug, problem });
    return new SsoFailure('sso_id_token_invalid', `The provider's ID token did not verify: ${problem}`);
  };
  if (!endpoints.keys) throw refuse('the issuer publishes no keys (jwks_uri)');
  const { jwtVerify } = await loadJose();
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(idToken, endpoints.keys, {
      issuer: endpoints.issuers,
      audience: row.client_id,
      algorithms: ID_TOKEN_ALGORITHMS,
      clockTolerance: ID_TOKEN_CLOCK_TOLERANCE_S,
      maxTokenAge: ID_TOKEN_MAX_AGE_S,
      currentDate: new Date(runtime.clock.now()),
      requiredClaims: ['sub', 'exp', 'iat'],
    }));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code !== 'string' || !BAD_ID_TOKEN_CODES.has(code)) throw error;
    // jose's messages name the claim or the check, never the token (its errors carry the payload: not logged).
    throw refuse(`${code}: ${(error as Error).message}`);
  }
  const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if ((audiences.length > 1 || payload.azp !== undefined) && payload.azp !== row.client_id)
    throw refuse('"azp" claim check failed');
  const nonce = typeof payload.nonce === 'string' ? sha256(payload.nonce) : null;
  if (!nonce || !timingSafeEqual(nonce, nonceHash)) throw refuse('"nonce" claim check failed');
  return payload;
}

/**
 * An OpenID Connect identity: the ID token's subject and address where the provider issued one (the
 * address and its verified flag as a pair: from the token when it carries the address, else from
 * userinfo, whose subject must then be the token's, OpenID Connect Core 5.3.2); userinfo alone where
 * the provider issued none.
 */
async function oidcIdentity(
  runtime: Context,
  row: ProviderRow,
  endpoints: Endpoints,
  tokens: OAuth2Tokens,
  nonceHash: Buffer,
): Promise<SsoIdentity> {
  const idToken = (tokens.data as Record<string, unknown>).id_token;
  const claims: Record<string, unknown> | null =
    typeof idToken === 'string' ? await verifiedIdToken(runtime, row, endpoints, idToken, nonceHash) : null;
  const fromClaims = (source: Record<string, unknown>) =>
    typeof source.email === 'string' && vouchesForEmail(row, source) ? source.email.toLowerCase() : null;
  if (claims && typeof claims.email === 'string') return { subject: subjectOf(claims.sub), email: fromClaims(claims) };
  if (!endpoints.userinfo) {
    if (claims) return { subject: subjectOf(claims.sub), email: null };
    throw new SsoFailure('sso_failed', 'The provider has no userinfo endpoint');
  }
  const headers = {
    Authorization: `Bearer ${tokens.accessToken()}`,
    Accept: 'application/json',
    'User-Agent': 'Herald',
  };
  const info = (await fetchJson(endpoints.userinfo, { headers })) as Record<string, unknown>;
  if (claims && info.sub !== claims.sub) {
    runtime.logger.warn('sso userinfo names another subject', { provider: row.slug });
    throw new SsoFailure('sso_id_token_invalid', "The provider's userinfo is not about the ID token's subject");
  }
  return { subject: subjectOf(claims ? claims.sub : info.sub), email: fromClaims(info) };
}

/**
 * The tenant an existing account signs in to through a provider, which may speak only for accounts it
 * is given: a tenant's provider for that tenant's members (into that tenant), an install-wide one for
 * addresses of the domains the operator allowed it. And only an account whose address was verified:
 * one that someone registered for the address without proving it must not capture its owner's SSO
 * sign-in (nor keep the registrant's password working on it).
 */
async function tenantForExistingUser(
  em: EntityManager,
  row: ProviderRow,
  user: { id: string; email_verified_at: Date | string | null },
  domain: string,
): Promise<string> {
  if (!user.email_verified_at)
    throw new SsoFailure(
      'sso_account_unverified',
      'An account with this address exists but its address was never verified: sign in with its password and verify it first',
    );
  if (row.tenant_id) {
    const member = await queryOne<{ tenant_id: string }>(em, FIND_PROVIDER_TENANT_MEMBERSHIP, [user.id, row.tenant_id]);
    if (!member)
      throw new SsoFailure('sso_provider_not_for_account', "This account is not a member of this provider's tenant");
    return member.tenant_id;
  }
  if (!row.allowed_domains.includes(domain))
    throw new SsoFailure('sso_provider_not_for_account', `This provider may not sign in accounts of ${domain}`);
  const tenantId = await defaultTenantOf(em, user.id);
  if (!tenantId) throw new SsoFailure('not_a_member', 'This account is not a member of any tenant');
  return tenantId;
}

/**
 * Links an account to the provider's subject. An account keeps the one subject it was first linked
 * to at a provider: a different subject with the same address is someone the address passed to.
 */
async function linkIdentity(em: EntityManager, row: ProviderRow, subject: string, userId: string): Promise<void> {
  await execute(em, INSERT_IDENTITY, [row.id, subject, userId]);
  if (!(await queryOne(em, FIND_IDENTITY, [row.id, subject, userId])))
    throw new SsoFailure(
      'sso_identity_mismatch',
      'This account is linked to another account at this provider: sign in with that one, or with the password',
    );
}

/**
 * Finishes a sign-in: checks the state and its browser binding, exchanges the code (with the PKCE
 * verifier), learns the provider's subject and verified email, and signs in the account linked to
 * that subject, else the account that has the address (linking it), where the provider may speak for
 * that account (tenantForExistingUser). A new user is created, and linked, only
 * when the address's domain is one the provider allows; they join the provider's tenant (in single
 * mode, the install's tenant) with its role, or, in multi mode without one, get a tenant of their own.
 */
export async function finishSso(
  runtime: Context,
  em: EntityManager,
  slug: string,
  input: { state?: string; code?: string; error?: string; cookie: string | null },
): Promise<AccessTokenBody | MfaChallengeBody> {
  const row = await providerBySlug(em, slug);
  const binding = cookieValue(input.cookie, SSO_COOKIE);
  const stored = input.state
    ? await queryOne<{
        code_verifier: string;
        binding_hash: Buffer;
        nonce_hash: Buffer;
        expires_at: Date | string;
        provider_id: string;
      }>(em, TAKE_STATE, [sha256(input.state)])
    : undefined;
  if (input.error) throw new SsoFailure('sso_denied', `The provider answered ${input.error}`);
  if (
    !stored ||
    stored.provider_id !== row.id ||
    !binding ||
    !timingSafeEqual(sha256(binding), Buffer.from(stored.binding_hash))
  ) {
    throw new SsoFailure('sso_state_invalid', 'This sign-in was not started in this browser, or was already used');
  }
  if (new Date(toIsoTimestamp(stored.expires_at)).getTime() <= runtime.clock.now())
    throw new SsoFailure('sso_state_invalid', 'This sign-in took too long');
  if (!input.code) throw new SsoFailure('sso_failed', 'The provider sent no authorization code');
  let identity: SsoIdentity;
  try {
    const endpoints = await endpointsOf(runtime, row);
    const tokens = await (
      await clientOf(runtime, row)
    ).validateAuthorizationCode(endpoints.token, input.code, stored.code_verifier);
    identity =
      row.kind === 'github'
        ? await gitHubIdentity(row, {
            Authorization: `Bearer ${tokens.accessToken()}`,
            Accept: 'application/json',
            'User-Agent': 'Herald',
          })
        : await oidcIdentity(runtime, row, endpoints, tokens, Buffer.from(stored.nonce_hash));
  } catch (error) {
    if (error instanceof SsoFailure) throw error;
    runtime.logger.warn('sso sign-in failed', { provider: slug, error: String(error) });
    throw new SsoFailure('sso_failed', 'The provider could not confirm the sign-in');
  }
  const linked = await queryOne<Pick<UserRow, 'id' | 'email' | 'email_verified_at'>>(em, FIND_LINKED_USER, [
    row.id,
    identity.subject,
  ]);
  if (linked)
    return signInOrAskForSecondFactor(
      runtime,
      em,
      linked.id,
      await tenantForExistingUser(em, row, linked, domainOf(linked.email)),
    );
  const email = identity.email;
  if (!email) throw new SsoFailure('sso_email_unverified', 'The provider did not vouch for an email address');
  const domain = domainOf(email);
  const user = await findUserByEmail(em, email);
  if (user) {
    const tenantId = await tenantForExistingUser(em, row, user, domain);
    await linkIdentity(em, row, identity.subject, user.id);
    return signInOrAskForSecondFactor(runtime, em, user.id, tenantId);
  }
  if (!row.allowed_domains.includes(domain))
    throw new SsoFailure(
      'sso_not_allowed',
      `No account for ${email}, and ${domain} may not join through this provider`,
    );
  return em.transactional(async (tx) => {
    const created = await createUser(tx, { email, password: randomBytes(32).toString('base64url'), verified: true });
    await linkIdentity(tx, row, identity.subject, created.id);
    const joinTenant =
      row.tenant_id ??
      (runtime.config.mode === 'single' ? (await queryOne<{ id: string }>(tx, FIND_INSTALL_TENANT))?.id : undefined);
    if (joinTenant) {
      await execute(tx, INSERT_DEFAULT_MEMBERSHIP, [created.id, joinTenant, row.default_role]);
      return signInOrAskForSecondFactor(runtime, tx, created.id, joinTenant);
    }
    if (runtime.config.mode === 'single') throw new SsoFailure('sso_not_allowed', 'This install has no tenant to join');
    const tenant = await createTenant(tx, {
      name: domain.slice(0, 100) || email.slice(0, 100),
      ownerUserId: created.id,
      makeDefault: true,
    });
    return signInOrAskForSecondFactor(runtime, tx, created.id, tenant.id);
  });
}

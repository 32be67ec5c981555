// Single sign-on for console users (arctic's OAuth 2.0 client, authorization code flow with state and
// PKCE). GitHub signs in through its OAuth API (the primary verified address of /user/emails); every
// other kind is OpenID Connect, its endpoints discovered from the issuer, the address taken from
// userinfo only when the provider says it is verified. The operator configures providers on the host
// (`herald sso add`); their base URLs are configurable, so tests reach local peers.
//
// A sign-in binds its state to the browser that started it: a random value in a short-lived HttpOnly
// cookie (only the SSO paths receive it) whose hash is stored with the state, so a callback URL
// carried to another browser does nothing (no login CSRF). The state row is consumed once.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { OAuth2Client } from 'arctic';
import { AppError } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { execute, query, queryOne, toIsoTimestamp } from '../base/db/sql.ts';
import { publicBaseUrl } from '../base/config.ts';
import type { Context } from '../base/context.ts';
import { issueAccessToken, defaultTenantOf, type AccessTokenBody } from './auth.ts';
import { createTenant } from './tenants.ts';
import { createUser, findUserByEmail } from './users.ts';
import { ssoClientSecretAad } from '../base/crypto/aad.ts';

export const SSO_KINDS = ['github', 'gitlab', 'google', 'microsoft', 'okta', 'keycloak', 'oidc'] as const;
export type SsoKind = (typeof SSO_KINDS)[number];

const STATE_TTL_MS = 10 * 60 * 1000;
const FETCH_TIMEOUT_MS = 10_000;
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

const INSERT_STATE = `INSERT INTO sso_states (state_hash, provider_id, code_verifier, binding_hash, expires_at)
  VALUES ($1, $2, $3, $4, $5)`;

const FIND_PROVIDER_TENANT_MEMBERSHIP = `SELECT tenant_id FROM memberships WHERE user_id = $1 AND tenant_id = $2`;

const TAKE_STATE = `DELETE FROM sso_states WHERE state_hash = $1
  RETURNING code_verifier, binding_hash, expires_at, provider_id`;

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
}

const discovered = new Map<string, { endpoints: Endpoints; until: number }>();

async function fetchJson(url: string, init: RequestInit = {}): Promise<unknown> {
  const response = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return response.json();
}

async function endpointsOf(runtime: Context, row: ProviderRow): Promise<Endpoints> {
  if (row.kind === 'github') {
    return {
      authorization: `${row.base_url}/login/oauth/authorize`,
      token: `${row.base_url}/login/oauth/access_token`,
      userinfo: null,
      scopes: ['read:user', 'user:email'],
    };
  }
  const cached = discovered.get(row.issuer!);
  if (cached && cached.until > runtime.clock.now()) return cached.endpoints;
  const doc = (await fetchJson(`${row.issuer}/.well-known/openid-configuration`)) as Record<string, unknown>;
  if (typeof doc.authorization_endpoint !== 'string' || typeof doc.token_endpoint !== 'string')
    throw new Error('the discovery document lacks endpoints');
  const endpoints = {
    authorization: doc.authorization_endpoint,
    token: doc.token_endpoint,
    userinfo: typeof doc.userinfo_endpoint === 'string' ? doc.userinfo_endpoint : null,
    scopes: ['openid', 'email', 'profile'],
  };
  discovered.set(row.issuer!, { endpoints, until: runtime.clock.now() + 10 * 60 * 1000 });
  return endpoints;
}

/** arctic, loaded on the first sign-in: a process whose install uses no SSO never needs it. */
const loadArctic = () => import('arctic');

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
    runtime.logger.warn('sso discovery failed', { provider: slug, error: String(error) });
    throw new SsoFailure('sso_failed', 'The sign-in provider cannot be reached right now');
  }
  const { CodeChallengeMethod, generateCodeVerifier, generateState } = await loadArctic();
  const state = generateState();
  const verifier = generateCodeVerifier();
  const binding = randomBytes(32).toString('base64url');
  await execute(em, DELETE_EXPIRED_STATES, [new Date(runtime.clock.now())]);
  await execute(em, INSERT_STATE, [
    sha256(state),
    row.id,
    verifier,
    sha256(binding),
    new Date(runtime.clock.now() + STATE_TTL_MS),
  ]);
  const url = (await clientOf(runtime, row)).createAuthorizationURLWithPKCE(
    endpoints.authorization,
    state,
    CodeChallengeMethod.S256,
    verifier,
    endpoints.scopes,
  );
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

async function verifiedEmail(row: ProviderRow, endpoints: Endpoints, accessToken: string): Promise<string> {
  const headers = { Authorization: `Bearer ${accessToken}`, Accept: 'application/json', 'User-Agent': 'Herald' };
  if (row.kind === 'github') {
    const emails = (await fetchJson(`${row.api_url}/user/emails`, { headers })) as Array<{
      email: string;
      primary: boolean;
      verified: boolean;
    }>;
    const primary = Array.isArray(emails) ? emails.find((e) => e.primary && e.verified === true) : undefined;
    if (!primary) throw new SsoFailure('sso_email_unverified', 'GitHub has no verified primary email for this account');
    return primary.email.toLowerCase();
  }
  if (!endpoints.userinfo) throw new SsoFailure('sso_failed', 'The provider has no userinfo endpoint');
  const info = (await fetchJson(endpoints.userinfo, { headers })) as Record<string, unknown>;
  // The boolean true only: a string "true" is no claim OpenID Connect defines.
  const verified = info.email_verified === true || (row.kind === 'microsoft' && info.xms_edov === true);
  if (typeof info.email !== 'string' || !verified)
    throw new SsoFailure('sso_email_unverified', 'The provider did not vouch for an email address');
  return info.email.toLowerCase();
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
 * Finishes a sign-in: checks the state and its browser binding, exchanges the code (with the PKCE
 * verifier), reads the verified email and signs in the user who has it, where the provider may speak
 * for that user (tenantForExistingUser). A new user is created only
 * when the address's domain is one the provider allows; they join the provider's tenant (in single
 * mode, the install's tenant) with its role, or, in multi mode without one, get a tenant of their own.
 */
export async function finishSso(
  runtime: Context,
  em: EntityManager,
  slug: string,
  input: { state?: string; code?: string; error?: string; cookie: string | null },
): Promise<AccessTokenBody> {
  const row = await providerBySlug(em, slug);
  const binding = cookieValue(input.cookie, SSO_COOKIE);
  const stored = input.state
    ? await queryOne<{ code_verifier: string; binding_hash: Buffer; expires_at: Date | string; provider_id: string }>(
        em,
        TAKE_STATE,
        [sha256(input.state)],
      )
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
  let email: string;
  try {
    const endpoints = await endpointsOf(runtime, row);
    const tokens = await (
      await clientOf(runtime, row)
    ).validateAuthorizationCode(endpoints.token, input.code, stored.code_verifier);
    email = await verifiedEmail(row, endpoints, tokens.accessToken());
  } catch (error) {
    if (error instanceof SsoFailure) throw error;
    runtime.logger.warn('sso sign-in failed', { provider: slug, error: String(error) });
    throw new SsoFailure('sso_failed', 'The provider could not confirm the sign-in');
  }
  const domain = email.split('@')[1] ?? '';
  const user = await findUserByEmail(em, email);
  if (user) return issueAccessToken(runtime, user.id, await tenantForExistingUser(em, row, user, domain));
  if (!row.allowed_domains.includes(domain))
    throw new SsoFailure(
      'sso_not_allowed',
      `No account for ${email}, and ${domain} may not join through this provider`,
    );
  return em.transactional(async (tx) => {
    const created = await createUser(tx, { email, password: randomBytes(32).toString('base64url'), verified: true });
    const joinTenant =
      row.tenant_id ??
      (runtime.config.mode === 'single' ? (await queryOne<{ id: string }>(tx, FIND_INSTALL_TENANT))?.id : undefined);
    if (joinTenant) {
      await execute(tx, INSERT_DEFAULT_MEMBERSHIP, [created.id, joinTenant, row.default_role]);
      return issueAccessToken(runtime, created.id, joinTenant);
    }
    if (runtime.config.mode === 'single') throw new SsoFailure('sso_not_allowed', 'This install has no tenant to join');
    const tenant = await createTenant(tx, {
      name: domain.slice(0, 100) || email.slice(0, 100),
      ownerUserId: created.id,
      makeDefault: true,
    });
    return issueAccessToken(runtime, created.id, tenant.id);
  });
}

// SSO sign-in for console users, end to end in Chromium: a real OpenID Connect provider (the
// oidc-provider package, its development login and consent pages) and a GitHub-shaped OAuth peer, both
// on loopback, configured with `herald sso add`. Existing users sign in by their verified email, and
// are linked to the provider's subject, which later sign-ins match first; new users only from an
// allowed domain (joining the provider's tenant); state is bound to the browser, works once, and PKCE
// is checked by the peer; ID tokens are verified (a forged or misdirected one, re-signed by the test
// from the provider's real token, refuses the sign-in); client secrets are sealed with the key ring.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import type { Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/app.ts';
import { noChromium, launchChromium, type ChromiumSession } from '../support/browser.ts';
import { titleUnless } from '../support/skip-reasons.ts';
import { runCli } from '../support/cli.ts';
import { addUser, createTenantFixture, requestAs, type TenantFixture } from '../support/fixtures.ts';
import { totpCode, totpSecret } from '../support/totp.ts';
import { execute, query, queryOne } from '../../server/base/db/sql.ts';

const OIDC_SECRET = `oidc-${randomBytes(12).toString('hex')}`;
const GITHUB_SECRET = `gh-${randomBytes(12).toString('hex')}`;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

type Claims = Record<string, unknown>;

interface OidcPeer {
  issuer: string;
  /** Accounts by login name (the subject); a login not here is an account whose email is its name. */
  accounts: Map<string, { email: string }>;
  /**
   * Rewrites the ID token of the token responses (its claims, then re-signed with the provider's key or,
   * with `otherKey`, with a key the provider does not publish under the same key id) and userinfo's
   * answers, until set back to null.
   */
  tamper: { idToken?: (claims: Claims) => Claims; otherKey?: boolean; userinfo?: (info: Claims) => Claims } | null;
  /** The ID tokens the tampering produced. */
  forged: string[];
  userinfoRequests: number;
  close(): Promise<void>;
}

const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

function signJwt(header: Claims, claims: Claims, key: KeyObject): string {
  const input = `${base64url(header)}.${base64url(claims)}`;
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

/** Lets `edit` change the JSON body of a 200 answer as the provider ends it. */
function rewriteJsonAnswer(res: ServerResponse, edit: (body: Claims) => Claims): void {
  const end = res.end.bind(res) as (chunk?: unknown) => ServerResponse;
  res.end = ((chunk?: unknown) => {
    if (res.statusCode !== 200 || chunk === undefined) return end(chunk);
    const text = JSON.stringify(edit(JSON.parse(Buffer.from(chunk as string).toString('utf8')) as Claims));
    res.setHeader('Content-Length', Buffer.byteLength(text));
    return end(text);
  }) as typeof res.end;
}

/**
 * A real OpenID Connect provider: any login name is an account (the subject) whose email is that name
 * (verified unless it says "unverified"), or the one `accounts` gives it. It signs its ID tokens with a
 * key the test holds, so tests can forge one from a real token. Under /mismatch it serves its own
 * discovery document (which names its issuer) as another issuer's.
 */
async function startOidcProvider(redirectUri: string): Promise<OidcPeer> {
  const server = createServer();
  const issuer = await listen(server);
  const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const signingKey = rsa();
  const otherKey = rsa();
  const peer: OidcPeer = {
    issuer,
    accounts: new Map(),
    tamper: null,
    forged: [],
    userinfoRequests: 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'herald',
        client_secret: OIDC_SECRET,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    features: { devInteractions: { enabled: true } },
    jwks: { keys: [{ ...signingKey.export({ format: 'jwk' }), kid: 'herald-test', alg: 'RS256', use: 'sig' }] },
    findAccount: (_ctx: unknown, id: string) => {
      const email = peer.accounts.get(id)?.email ?? id;
      return { accountId: id, claims: () => ({ sub: id, email, email_verified: !email.includes('unverified') }) };
    },
  });
  const handle = provider.callback();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.url!.startsWith('/mismatch/')) req.url = req.url!.slice('/mismatch'.length);
    const tamper = peer.tamper;
    if (req.url === '/token' && tamper?.idToken) {
      rewriteJsonAnswer(res, (body) => {
        const [header, claims] = String(body.id_token)
          .split('.')
          .slice(0, 2)
          .map((part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Claims);
        const forged = signJwt(header!, tamper.idToken!(claims!), tamper.otherKey ? otherKey : signingKey);
        peer.forged.push(forged);
        return { ...body, id_token: forged };
      });
    }
    if (req.url === '/me') {
      peer.userinfoRequests++;
      if (tamper?.userinfo) rewriteJsonAnswer(res, tamper.userinfo);
    }
    handle(req, res);
  });
  return peer;
}

interface GitHubPeer {
  url: string;
  /** The primary email of the next sign-in, and whether GitHub says it is verified. */
  next: { email: string; verified: boolean };
  codeChallenges: string[];
  close(): Promise<void>;
}

/** The GitHub peer's account id for an address: one account per address, as the tests need. */
const gitHubIdOf = (email: string) => createHash('sha256').update(email.toLowerCase()).digest().readUInt32BE(0);

/**
 * A GitHub-shaped OAuth peer: authorize (approves at once), access_token (checks the secret and PKCE),
 * user and user/emails.
 */
async function startGitHubPeer(): Promise<GitHubPeer> {
  const codes = new Map<string, { challenge: string; redirect: string; email: { email: string; verified: boolean } }>();
  const tokens = new Map<string, { email: string; verified: boolean }>();
  const peer = { next: { email: '', verified: true }, codeChallenges: [] as string[] } as GitHubPeer;
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url!, 'http://peer');
    if (url.pathname === '/login/oauth/authorize') {
      const code = randomBytes(12).toString('hex');
      const challenge = url.searchParams.get('code_challenge') ?? '';
      peer.codeChallenges.push(challenge);
      codes.set(code, { challenge, redirect: url.searchParams.get('redirect_uri')!, email: { ...peer.next } });
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state')!);
      res.writeHead(302, { Location: back.toString() }).end();
      return;
    }
    if (url.pathname === '/login/oauth/access_token' && req.method === 'POST') {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const body = new URLSearchParams(raw);
      const basic = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString();
      const grant = codes.get(body.get('code') ?? '');
      codes.delete(body.get('code') ?? '');
      const verifier = body.get('code_verifier') ?? '';
      const pkceOk = grant && createHash('sha256').update(verifier).digest('base64url') === grant.challenge;
      if (basic !== `gh-client:${GITHUB_SECRET}` || !grant || !pkceOk || body.get('redirect_uri') !== grant.redirect) {
        res
          .writeHead(200, { 'Content-Type': 'application/json' })
          .end(JSON.stringify({ error: 'bad_verification_code' }));
        return;
      }
      const token = randomBytes(12).toString('hex');
      tokens.set(token, grant.email);
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ access_token: token, token_type: 'bearer', scope: 'read:user,user:email' }));
      return;
    }
    if (url.pathname === '/api/user') {
      const who = tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
      if (!who) return void res.writeHead(401).end();
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ id: gitHubIdOf(who.email), login: who.email.split('@')[0] }));
      return;
    }
    if (url.pathname === '/api/user/emails') {
      const who = tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
      if (!who) return void res.writeHead(401).end();
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify([{ email: who.email, primary: true, verified: who.verified, visibility: 'private' }]));
      return;
    }
    res.writeHead(404).end();
  });
  peer.url = await listen(server);
  peer.close = () => new Promise((resolve) => server.close(() => resolve()));
  return peer;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** ID tokens re-signed from the provider's real one, each wrong in one way (and a userinfo about someone else). */
const BAD_ID_TOKENS: Array<[string, NonNullable<OidcPeer['tamper']>]> = [
  ['signed by a key the issuer does not publish', { idToken: (c) => c, otherKey: true }],
  ['for another client', { idToken: (c) => ({ ...c, aud: 'another-client' }) }],
  ['for several clients, authorized for another', { idToken: (c) => ({ ...c, aud: ['herald', 'x'], azp: 'x' }) }],
  ['for several clients, with no azp', { idToken: ({ azp: _azp, ...c }) => ({ ...c, aud: ['herald', 'x'] }) }],
  ['from another issuer', { idToken: (c) => ({ ...c, iss: 'http://127.0.0.1:9' }) }],
  ['that expired', { idToken: (c) => ({ ...c, iat: nowSeconds() - 900, exp: nowSeconds() - 300 }) }],
  ['issued for another sign-in', { idToken: (c) => ({ ...c, nonce: randomBytes(32).toString('base64url') }) }],
  ['without the nonce', { idToken: ({ nonce: _nonce, ...c }) => c }],
  ['whose userinfo is about another subject', { userinfo: (info) => ({ ...info, sub: 'someone-else' }) }],
];

describe.skipIf(noChromium)(titleUnless(noChromium, 'SSO sign-in'), { timeout: 60_000 }, () => {
  let app: TestApp;
  let acme: TenantFixture;
  let oidc: OidcPeer;
  let github: GitHubPeer;
  let browser: ChromiumSession;
  const env = () => ({
    HERALD_HOME: app.dataDir,
    DATABASE_URL: app.database.url,
    HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys!,
    HERALD_LOG_LEVEL: 'error',
  });

  beforeAll(async () => {
    // The redirect URI names the public URL, so the port is chosen before Herald starts.
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    oidc = await startOidcProvider(`${publicUrl}/v1/auth/sso/corp/callback`);
    github = await startGitHubPeer();
    app = await startTestApp({ port, config: { publicUrl } });
    acme = await createTenantFixture(app, 'Acme');
    const added = await runCli(
      [
        'sso',
        'add',
        'corp',
        '--kind',
        'oidc',
        '--name',
        'Corp SSO',
        '--issuer',
        oidc.issuer,
        '--client-id',
        'herald',
        '--client-secret-env',
        'SSO_SECRET',
        '--allowed-domains',
        'corp.example',
        '--tenant',
        acme.tenantId,
      ],
      { env: { ...env(), SSO_SECRET: OIDC_SECRET } },
    );
    expect(added.code, added.stderr).toBe(0);
    const gh = await runCli(
      [
        'sso',
        'add',
        'github',
        '--kind',
        'github',
        '--base-url',
        github.url,
        '--api-url',
        `${github.url}/api`,
        '--client-id',
        'gh-client',
        '--client-secret-env',
        'SSO_SECRET',
        // An install-wide provider signs in existing accounts of the domains it is allowed only.
        '--allowed-domains',
        'example.test',
        '--json',
      ],
      { env: { ...env(), SSO_SECRET: GITHUB_SECRET } },
    );
    expect(gh.code, gh.stderr).toBe(0);
    expect(gh.stdout).not.toContain(GITHUB_SECRET);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await oidc?.close();
    await github?.close();
  });

  async function ssoFromLogin(page: Page, button: string): Promise<void> {
    // Each sign-in starts with no session at the provider (it would otherwise skip its login page).
    await browser.context.clearCookies();
    await page.goto(`${app.url}/login`);
    await page.getByRole('link', { name: button }).click();
  }

  async function oidcLogin(page: Page, login: string): Promise<void> {
    await page.locator('input[name=login]').fill(login);
    await page.locator('input[name=password]').fill('anything');
    await page.locator('button[type=submit]').click();
    await page.getByRole('button', { name: 'Continue' }).click();
  }

  /** The user the page is signed in as (the console token's subject), or null. */
  async function signedInAs(page: Page): Promise<string | null> {
    const token = await page.evaluate(() => sessionStorage.getItem('herald.token'));
    return token ? (app.runtime.tokens.verify(token, Date.now())?.sub ?? null) : null;
  }

  /** A sign-in through Corp SSO as `login` that reaches the console; the user it signed in as. */
  async function corpSignIn(login: string): Promise<string | null> {
    const page = await browser.context.newPage();
    await ssoFromLogin(page, 'Continue with Corp SSO');
    await oidcLogin(page, login);
    await page.waitForURL(/\/console\//);
    const user = await signedInAs(page);
    await page.close();
    return user;
  }

  /** A sign-in through Corp SSO as `login` that the login page refuses with `message`. */
  async function corpRefused(login: string, message: RegExp): Promise<void> {
    const page = await browser.context.newPage();
    await ssoFromLogin(page, 'Continue with Corp SSO');
    await oidcLogin(page, login);
    await page.getByText(message).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('herald.token'))).toBeNull();
    await page.close();
  }

  const identities = (where: string, params: unknown[]) =>
    query<{ slug: string; subject: string; user_id: string }>(
      app.runtime.orm.em.fork(),
      `SELECT p.slug, i.subject, i.user_id FROM sso_identities i JOIN sso_providers p ON p.id = i.provider_id
       WHERE ${where} ORDER BY p.slug`,
      params,
    );

  it('lists the providers publicly, and starts with state, PKCE (S256) and a browser-bound cookie', async () => {
    const list = await requestAs(app, 'GET', '/v1/auth/sso/providers');
    expect(list.status).toBe(200);
    expect(list.body).toEqual([
      { slug: 'corp', name: 'Corp SSO', kind: 'oidc', start_url: '/v1/auth/sso/corp/start' },
      { slug: 'github', name: 'GitHub', kind: 'github', start_url: '/v1/auth/sso/github/start' },
    ]);
    const start = await fetch(`${app.url}/v1/auth/sso/corp/start`, { redirect: 'manual' });
    expect(start.status).toBe(302);
    const location = new URL(start.headers.get('location')!);
    expect(location.origin).toBe(oidc.issuer);
    expect(location.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(location.searchParams.get('redirect_uri')).toBe(`${app.config.publicUrl}/v1/auth/sso/corp/callback`);
    expect(location.searchParams.get('scope')).toBe('openid email profile');
    // A nonce per sign-in, which its ID token must carry back.
    expect(location.searchParams.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const again = new URL(
      (await fetch(`${app.url}/v1/auth/sso/corp/start`, { redirect: 'manual' })).headers.get('location')!,
    );
    expect(again.searchParams.get('nonce')).not.toBe(location.searchParams.get('nonce'));
    expect(start.headers.get('set-cookie')).toMatch(
      /^herald_sso=[A-Za-z0-9_-]{40,}; Path=\/v1\/auth\/sso; Max-Age=600; HttpOnly; SameSite=Lax$/,
    );
    expect((await fetch(`${app.url}/v1/auth/sso/nobody/start`, { redirect: 'manual' })).status).toBe(404);
    expect((await fetch(`${app.url}/v1/auth/sso/Not_A_Slug!/start`, { redirect: 'manual' })).status).toBe(422);
  });

  it('signs an existing user in through OpenID Connect with the same console token as a password', async () => {
    const page = await browser.context.newPage();
    await page.goto(`${app.url}/login`);
    await page.getByRole('link', { name: 'Continue with Corp SSO' }).waitFor();
    await page.screenshot({ path: new URL('../.tmp/screenshots/15-login-sso.png', import.meta.url).pathname });
    await ssoFromLogin(page, 'Continue with Corp SSO');
    await oidcLogin(page, acme.ownerEmail);
    await page.waitForURL(/\/console\/activity/);
    await expect(page.locator('#tenant-switcher option:checked').textContent()).resolves.toBe('Acme');
    // The token never stays in the address bar, and it works on the API like a password sign-in's.
    expect(page.url()).not.toContain('sso_token');
    const token = await page.evaluate(() => sessionStorage.getItem('herald.token'));
    const tenants = await requestAs(app, 'GET', '/v1/auth/tenants', { token: token! });
    expect(tenants.status).toBe(200);
    expect(tenants.body[0]).toMatchObject({ id: acme.tenantId, role: 'owner' });
    await page.close();
    // The provider's ID token (which carries no address: oidc-provider keeps it for userinfo) passed,
    // and the account is linked to its subject.
    expect(await identities('i.user_id = $1', [acme.ownerId])).toEqual([
      { slug: 'corp', subject: acme.ownerEmail, user_id: acme.ownerId },
    ]);
  });

  it('asks a user with a second factor for their code after the provider, as a password sign-in does', async () => {
    const member = await addUser(app, acme.tenantId, 'admin', true);
    const started = await requestAs(app, 'POST', '/v1/auth/mfa/totp', { token: member.token });
    expect(started.status, started.text).toBe(201);
    const secret = totpSecret(started.body.otpauth_uri);
    // The confirming code's step is spent: the sign-in below uses the next one.
    const confirmedAt = Date.now();
    const confirmed = await requestAs(app, 'POST', '/v1/auth/mfa/totp/confirm', {
      token: member.token,
      body: { code: totpCode(secret, confirmedAt) },
    });
    expect(confirmed.status, confirmed.text).toBe(200);
    const page = await browser.context.newPage();
    await ssoFromLogin(page, 'Continue with Corp SSO');
    await oidcLogin(page, member.email);
    await page.getByRole('heading', { name: 'Two-factor sign-in' }).waitFor();
    // The provider's sign-in alone gave no console token.
    expect(await page.evaluate(() => sessionStorage.getItem('herald.token'))).toBeNull();
    expect(page.url()).not.toContain('mfa_token');
    await page.getByLabel('Code').fill(totpCode(secret, Math.max(Date.now(), confirmedAt + 30_000)));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(/\/console\//);
    expect(await signedInAs(page)).toBe(member.userId);
    await page.close();
  });

  it.each(BAD_ID_TOKENS)('refuses an ID token %s, whatever userinfo says', async (_what, tamper) => {
    const member = await addUser(app, acme.tenantId, 'admin', true);
    const subject = `forged-${randomBytes(4).toString('hex')}`;
    oidc.accounts.set(subject, { email: member.email });
    const forged = oidc.forged.length;
    const logged = app.logs.length;
    oidc.tamper = tamper;
    try {
      await corpRefused(subject, /proof of your sign-in did not check out/);
    } finally {
      oidc.tamper = null;
    }
    if (tamper.idToken) expect(oidc.forged.length).toBe(forged + 1);
    expect(await identities('i.subject = $1', [subject])).toEqual([]);
    expect(app.logs.slice(logged).join('\n')).toMatch(/sso (id token refused|userinfo names another subject)/);
    const logs = app.logs.join('\n');
    for (const token of oidc.forged) expect(logs).not.toContain(token.split('.')[2]);
    // The same account through the same provider, with the provider's own ID token: signed in.
    expect(await corpSignIn(subject)).toBe(member.userId);
  });

  it('takes the address from the ID token when it carries one, and asks userinfo nothing', async () => {
    const member = await addUser(app, acme.tenantId, 'admin', true);
    const userinfoBefore = oidc.userinfoRequests;
    oidc.tamper = { idToken: (c) => ({ ...c, email: member.email, email_verified: true }) };
    try {
      // userinfo would name another address (the login's own); the ID token's wins.
      expect(await corpSignIn(`token-claims.${randomBytes(3).toString('hex')}@corp.example`)).toBe(member.userId);
    } finally {
      oidc.tamper = null;
    }
    expect(oidc.userinfoRequests).toBe(userinfoBefore);
  });

  it('matches the subject first: a changed address keeps the account, a reassigned one signs in nobody', async () => {
    const member = await addUser(app, acme.tenantId, 'admin', true);
    const subject = `employee-${randomBytes(4).toString('hex')}`;
    oidc.accounts.set(subject, { email: member.email });
    expect(await corpSignIn(subject)).toBe(member.userId);
    expect(await identities('i.subject = $1', [subject])).toEqual([{ slug: 'corp', subject, user_id: member.userId }]);
    // The person's address changes at the provider (to one of a domain that could join): still them.
    oidc.accounts.set(subject, { email: `renamed.${randomBytes(3).toString('hex')}@corp.example` });
    expect(await corpSignIn(subject)).toBe(member.userId);
    // The provider gives the old address to someone else: not signed in to the linked account.
    const successor = `successor-${randomBytes(4).toString('hex')}`;
    oidc.accounts.set(successor, { email: member.email });
    await corpRefused(successor, /linked to another account at this sign-in provider/);
    expect(await identities('i.subject = $1', [successor])).toEqual([]);
  });

  it('lets a new user from an allowed domain join the provider tenant as admin, and refuses other domains and unverified emails', async () => {
    const page = await browser.context.newPage();
    const newcomer = `newcomer.${randomBytes(3).toString('hex')}@corp.example`;
    await ssoFromLogin(page, 'Continue with Corp SSO');
    await oidcLogin(page, newcomer);
    await page.waitForURL(/\/console\//);
    const member = await queryOne<{ role: string }>(
      app.runtime.orm.em.fork(),
      `SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = $1 AND m.tenant_id = $2`,
      [newcomer, acme.tenantId],
    );
    expect(member?.role).toBe('admin');
    await page.close();

    const outsider = await browser.context.newPage();
    await ssoFromLogin(outsider, 'Continue with Corp SSO');
    await oidcLogin(outsider, `someone@elsewhere.example`);
    await outsider.getByText(/its domain may not join through this provider/).waitFor();
    expect(
      await queryOne(app.runtime.orm.em.fork(), `SELECT 1 FROM users WHERE email = 'someone@elsewhere.example'`),
    ).toBeUndefined();
    await outsider.screenshot({ path: new URL('../.tmp/screenshots/16-sso-refused.png', import.meta.url).pathname });

    await ssoFromLogin(outsider, 'Continue with Corp SSO');
    await oidcLogin(outsider, `unverified.${randomBytes(3).toString('hex')}@corp.example`);
    await outsider.getByText(/did not confirm your email address/).waitFor();
    await outsider.close();
  });

  it('signs in through a GitHub-shaped provider (PKCE checked by the peer); the callback works once', async () => {
    const user = await addUser(app, acme.tenantId, 'admin', true);
    github.next = { email: user.email.toUpperCase(), verified: true };
    const page = await browser.context.newPage();
    let callback = '';
    page.on('request', (request) => {
      if (request.url().includes('/v1/auth/sso/github/callback')) callback = request.url();
    });
    await ssoFromLogin(page, 'Continue with GitHub');
    await page.waitForURL(/\/console\//);
    expect(await identities('i.user_id = $1', [user.userId])).toEqual([
      { slug: 'github', subject: String(gitHubIdOf(user.email)), user_id: user.userId },
    ]);
    expect(github.codeChallenges.at(-1)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(callback).toContain('state=');
    // The same callback again (a replay, or a reload of the history entry): the state is spent.
    await page.goto(callback);
    await page.getByText(/could not be finished/).waitFor();
    await page.close();
  });

  it("refuses another tenant's user through a tenant's provider, whatever the email domain", async () => {
    const other = await createTenantFixture(app, 'Other');
    const page = await browser.context.newPage();
    await ssoFromLogin(page, 'Continue with Corp SSO');
    await oidcLogin(page, other.ownerEmail);
    await page.getByText(/may not sign in your Herald account/).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('herald.token'))).toBeNull();
    await page.close();
  });

  it('refuses an install-wide provider for an account of a domain it is not allowed', async () => {
    const outsider = await addUser(app, acme.tenantId, 'admin', true);
    await execute(app.runtime.orm.em.fork(), `UPDATE users SET email = $2 WHERE id = $1`, [
      outsider.userId,
      `outside.${randomBytes(3).toString('hex')}@elsewhere.test`,
    ]);
    const { email } = (await queryOne<{ email: string }>(
      app.runtime.orm.em.fork(),
      `SELECT email FROM users WHERE id = $1`,
      [outsider.userId],
    ))!;
    github.next = { email, verified: true };
    const page = await browser.context.newPage();
    await ssoFromLogin(page, 'Continue with GitHub');
    await page.getByText(/may not sign in your Herald account/).waitFor();
    await page.close();
  });

  it("does not let an account registered for an address without verifying it capture that address's SSO sign-in", async () => {
    const victim = `victim.${randomBytes(3).toString('hex')}@corp.example`;
    const registered = await requestAs(app, 'POST', '/v1/auth/register', {
      body: { email: victim, password: 'attacker-password-123', tenant_name: 'Trap' },
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    const page = await browser.context.newPage();
    await ssoFromLogin(page, 'Continue with Corp SSO');
    await oidcLogin(page, victim);
    await page.getByText(/its address was never verified/).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('herald.token'))).toBeNull();
    await page.close();
  });

  it('refuses a GitHub account whose primary email is not verified', async () => {
    github.next = { email: acme.ownerEmail, verified: false };
    const page = await browser.context.newPage();
    await ssoFromLogin(page, 'Continue with GitHub');
    await page.getByText(/did not confirm your email address/).waitFor();
    await page.close();
  });

  it('refuses a callback carried to another browser (no binding cookie), as a login CSRF would', async () => {
    github.next = { email: acme.ownerEmail, verified: true };
    const start = await fetch(`${app.url}/v1/auth/sso/github/start`, { redirect: 'manual' });
    const approved = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const callback = approved.headers.get('location')!;
    const stolen = await fetch(callback, { redirect: 'manual' });
    expect(stolen.status).toBe(302);
    expect(stolen.headers.get('location')).toBe('/login#sso_error=sso_state_invalid');
    // A malformed answer from a provider is told as a failed sign-in, never a 500.
    const junk = await fetch(`${app.url}/v1/auth/sso/github/callback?error=access_denied`, { redirect: 'manual' });
    expect(junk.headers.get('location')).toBe('/login#sso_error=sso_denied');
  });

  it('keeps client secrets sealed, lists without them, removes a provider, and audits the changes', async () => {
    const rows = await query<{ client_secret_ciphertext: string }>(
      app.runtime.orm.em.fork(),
      `SELECT client_secret_ciphertext FROM sso_providers`,
    );
    for (const row of rows) {
      expect(row.client_secret_ciphertext).not.toContain(OIDC_SECRET);
      expect(row.client_secret_ciphertext).not.toContain(GITHUB_SECRET);
    }
    const list = await runCli(['sso', 'list', '--json'], { env: env() });
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).map((p: { slug: string }) => p.slug)).toEqual(['corp', 'github']);
    expect(list.stdout).not.toMatch(/secret/i);
    const noConfirm = await runCli(['sso', 'remove', 'github'], { env: env() });
    expect(noConfirm.code).toBe(2);
    const removed = await runCli(['sso', 'remove', 'github', '--yes'], { env: env() });
    expect(removed.code, removed.stderr).toBe(0);
    expect((await requestAs(app, 'GET', '/v1/auth/sso/providers')).body.map((p: { slug: string }) => p.slug)).toEqual([
      'corp',
    ]);
    const missing = await runCli(['sso', 'remove', 'github', '--yes'], { env: env() });
    expect(missing.code).toBe(1);
    const bad = await runCli(['sso', 'add', 'x', '--kind', 'okta', '--client-id', 'a', '--client-secret', 'b'], {
      env: env(),
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('issuer');
    const audit = await runCli(['audit', '--action', 'sso_provider.*', '--json'], { env: env() });
    const actions = JSON.parse(audit.stdout).items.map((e: { action: string }) => e.action);
    expect(actions).toEqual(['sso_provider.delete', 'sso_provider.create', 'sso_provider.create']);
    expect(audit.stdout).not.toContain(GITHUB_SECRET);
  });

  it('sends a person back to the sign-in page when the provider cannot be reached', async () => {
    const added = await runCli(
      [
        'sso',
        'add',
        'down',
        '--kind',
        'keycloak',
        '--issuer',
        'http://127.0.0.1:9/realms/x',
        '--client-id',
        'a',
        '--client-secret-env',
        'SSO_SECRET',
      ],
      {
        env: { ...env(), SSO_SECRET: 'unused-secret' },
      },
    );
    expect(added.code, added.stderr).toBe(0);
    const start = await fetch(`${app.url}/v1/auth/sso/down/start`, { redirect: 'manual' });
    expect(start.status).toBe(302);
    expect(start.headers.get('location')).toBe('/login#sso_error=sso_failed');
  });

  it('refuses a provider whose discovery document names another issuer', async () => {
    /** Adds an OpenID Connect provider for the test provider's client, as `issuer`; where its start leads. */
    const startThrough = async (slug: string, issuer: string) => {
      const args = ['sso', 'add', slug, '--kind', 'oidc', '--issuer', issuer, '--client-id', 'herald'];
      const added = await runCli([...args, '--client-secret-env', 'S'], { env: { ...env(), S: OIDC_SECRET } });
      expect(added.code, added.stderr).toBe(0);
      const start = await fetch(`${app.url}/v1/auth/sso/${slug}/start`, { redirect: 'manual' });
      expect(start.status).toBe(302);
      return start.headers.get('location')!;
    };
    // The real provider's document, served as that of another issuer (as a mix-up attack would).
    const mixup = `${oidc.issuer}/mismatch`;
    const doc = (await (await fetch(`${mixup}/.well-known/openid-configuration`)).json()) as Claims;
    expect(doc.issuer).toBe(oidc.issuer);
    expect(await startThrough('mixup', mixup)).toBe('/login#sso_error=sso_issuer_mismatch');
    expect(app.logs.join('\n')).toContain('sso discovery names another issuer');
    // The issuer as given, a trailing slash aside, is the one the document names: that provider starts.
    expect(new URL(await startThrough('slash', `${oidc.issuer}/`)).origin).toBe(oidc.issuer);
  });
});

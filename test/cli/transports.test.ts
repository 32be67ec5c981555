// `herald transports ...` as a real subprocess: local admin mode (--tenant, straight to the database)
// and remote mode (--url/--api-key or HERALD_URL/HERALD_API_KEY, through the HTTP API). Secrets come
// from files or stdin and never appear in the output.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestApp, type TestApp } from '../support/app.ts';
import { runCli, type CliResult } from '../support/cli.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';
import { testCertificate } from '../support/tls.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';
import { sendTenantEmail } from '../../server/channels/email/transport.ts';
import { runTempDir } from '../support/tmp.ts';
import { postJson } from '../support/provider-peers/index.ts';

const SMTP_PASS = 'cli-smtp-Secret-5150';
const VONAGE_API_SECRET = 'cli-vonage-Api-Secret-77';
const VONAGE_SIGNATURE_SECRET = 'cli-vonage-Signature-Secret-4242';
const apnsKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();

let app: TestApp;
let smtp: SmtpPeer;
let t: TenantFixture;
let other: TenantFixture;
let dir: string;
const outputs: CliResult[] = [];

async function herald(
  args: string[],
  options: { input?: string; env?: Record<string, string | undefined> } = {},
): Promise<CliResult> {
  const result = await runCli(args, {
    input: options.input,
    env: {
      DATABASE_URL: app.database.url,
      HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys,
      HERALD_HOME: app.dataDir,
      // The SMTP peer listens on loopback, with the test certificate for its STARTTLS.
      HERALD_ALLOW_PRIVATE_SMTP_HOSTS: 'true',
      NODE_EXTRA_CA_CERTS: testCertificate().caFile,
      HERALD_URL: undefined,
      HERALD_API_KEY: undefined,
      ...options.env,
    },
  });
  outputs.push(result);
  return result;
}

beforeAll(async () => {
  smtp = await startSmtpPeer({ auth: { user: 'cli', pass: SMTP_PASS } });
  app = await startTestApp();
  t = await createTenantFixture(app, 'Cli');
  other = await createTenantFixture(app, 'NoTransport');
  dir = runTempDir('herald-cli-transports-');
  writeFileSync(join(dir, 'AuthKey.p8'), apnsKey);
  writeFileSync(
    join(dir, 'apns.json'),
    JSON.stringify({ team_id: 'TEAM123456', key_id: 'KEYID12345', bundle_id: 'com.acme.app', environment: 'sandbox' }),
  );
});
afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

describe('herald transports email (local mode)', () => {
  it('test exits 1, not 2, when there is nothing to test: no tenant transport (locally and remotely), no install SMTP', async () => {
    const local = await herald(['transports', 'email', 'test', '--tenant', other.tenantId, '--to', 'ops@cli.test']);
    expect(local.code, local.stderr).toBe(1);
    expect(local.stderr).toMatch(/No email transport is configured/);
    const remote = await herald([
      'transports',
      'email',
      'test',
      '--url',
      app.url,
      '--api-key',
      other.serviceKey,
      '--to',
      'ops@cli.test',
    ]);
    expect(remote.code, remote.stderr).toBe(1);
    expect(remote.stderr).toMatch(/HTTP 422: No email transport is configured/);
    const install = await herald(['transports', 'email', 'test', '--install', '--to', 'ops@cli.test']);
    expect(install.code, install.stderr).toBe(1);
    expect(install.stderr).toMatch(/The install has no SMTP/);
    const badAddress = await herald([
      'transports',
      'email',
      'test',
      '--tenant',
      other.tenantId,
      '--to',
      'not-an-address',
    ]);
    expect(badAddress.code).toBe(2);
  });

  it('set reads the password from stdin, then test sends through the transport', async () => {
    const set = await herald(
      [
        'transports',
        'email',
        'set',
        '--tenant',
        t.tenantId,
        '--host',
        '127.0.0.1',
        '--port',
        String(smtp.port),
        '--username',
        'cli',
        '--password-file',
        '-',
        '--from-email',
        'noreply@cli.test',
        '--json',
      ],
      { input: `${SMTP_PASS}\n` },
    );
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({
      configured: true,
      host: '127.0.0.1',
      username: 'cli',
      credentials_unreadable: false,
    });
    const test = await herald(['transports', 'email', 'test', '--tenant', t.tenantId, '--to', 'ops@cli.test']);
    expect(test.code, test.stderr).toBe(0);
    expect(test.stdout).toMatch(/^sent \(message id .+\)/);
    const mail = await smtp.waitFor((m) => m.envelope.to.includes('ops@cli.test'));
    expect(mail.user).toBe('cli');
  });

  it('set-default stores the install default SMTP, used for tenants without a transport', async () => {
    const res = await herald(
      [
        'transports',
        'email',
        'set-default',
        '--host',
        '127.0.0.1',
        '--port',
        String(smtp.port),
        '--username',
        'cli',
        '--password-file',
        '-',
        '--from',
        'Herald <herald@cli.test>',
      ],
      { input: SMTP_PASS },
    );
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/install default SMTP set to 127\.0\.0\.1/);
    const sent = await sendTenantEmail(app.runtime, app.runtime.orm.em.fork(), other.tenantId, {
      to: 'x@cli.test',
      subject: 'Default',
      html: '<p>d</p>',
      text: 'd',
    });
    expect(sent.status).toBe('sent');
    const mail = await smtp.waitFor((m) => m.parsed.subject === 'Default');
    expect(mail.parsed.from?.value[0]?.address).toBe('herald@cli.test');
  });

  it("test --install sends through the install's own SMTP", async () => {
    const res = await herald(['transports', 'email', 'test', '--install', '--to', 'install@cli.test']);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^sent through the install's default SMTP \(message id .+\)/);
    const mail = await smtp.waitFor((m) => m.envelope.to.includes('install@cli.test'));
    expect(mail.parsed.from?.value[0]?.address).toBe('herald@cli.test');
    const both = await herald([
      'transports',
      'email',
      'test',
      '--install',
      '--tenant',
      t.tenantId,
      '--to',
      'install@cli.test',
    ]);
    expect(both.code).toBe(2);
  });

  it("show and test, for a tenant without a transport of its own, use the install's default SMTP", async () => {
    const remote = { HERALD_URL: app.url, HERALD_API_KEY: other.serviceKey };
    for (const env of [{}, remote]) {
      const target = 'HERALD_URL' in env ? [] : ['--tenant', other.tenantId];
      const show = await herald(['transports', 'email', 'show', ...target], { env });
      expect(show.code, show.stderr).toBe(0);
      expect(show.stdout).not.toMatch(/no email transport configured/);
      expect(show.stdout).toContain(`install's default SMTP: 127.0.0.1:${smtp.port}`);
      const shown = await herald(['transports', 'email', 'show', '--json', ...target], { env });
      expect(JSON.parse(shown.stdout)).toEqual({
        configured: false,
        install_default: {
          host: '127.0.0.1',
          port: smtp.port,
          secure: false,
          from: 'Herald <herald@cli.test>',
          credentials_unreadable: false,
        },
      });
      const to = `default-${target.length > 0 ? 'local' : 'remote'}@cli.test`;
      const test = await herald(['transports', 'email', 'test', '--to', to, ...target], { env });
      expect(test.code, test.stderr).toBe(0);
      expect(test.stdout).toMatch(/^sent through the install's default SMTP \(message id .+\)/);
      const mail = await smtp.waitFor((m) => m.envelope.to.includes(to));
      expect(mail.user).toBe('cli');
      expect(mail.parsed.from?.value[0]?.address).toBe('herald@cli.test');
      const json = await herald(['transports', 'email', 'test', '--to', to, '--json', ...target], { env });
      expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, transport: 'install_default' });
    }
  });

  it('refuses without a target, and refuses to remove without --yes when not on a terminal', async () => {
    const none = await herald(['transports', 'email', 'show']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/--tenant <id>.*--url/);
    const remove = await herald(['transports', 'email', 'remove', '--tenant', t.tenantId]);
    expect(remove.code).toBe(2);
    expect(remove.stderr).toMatch(/--yes/);
  });
});

/** A Vonage callback's parameters signed as Vonage's md5hash method signs them, with `secret`. */
function vonageSigned(params: Record<string, string>, secret: string): Record<string, string> {
  const data = Object.keys(params)
    .sort()
    .map((name) => `&${name}=${params[name]}`)
    .join('');
  return {
    ...params,
    sig: createHash('md5')
      .update(data + secret)
      .digest('hex'),
  };
}

describe('herald transports sms (remote mode)', () => {
  it('set vonage reads the signature secret from --signature-secret-file: Herald then admits only signed receipts', async () => {
    const remote = ['--url', app.url, '--api-key', t.serviceKey];
    writeFileSync(join(dir, 'vonage-api-secret'), `${VONAGE_API_SECRET}\n`);
    const vonage = [
      'transports',
      'sms',
      'set',
      'vonage',
      ...remote,
      '--vonage-api-key',
      'abc123',
      '--from',
      'Acme',
      '--api-secret-file',
      join(dir, 'vonage-api-secret'),
    ];
    const set = await herald([...vonage, '--signature-secret-file', '-', '--json'], {
      input: `${VONAGE_SIGNATURE_SECRET}\n`,
    });
    expect(set.code, set.stderr).toBe(0);
    const entry = JSON.parse(set.stdout);
    expect(entry.settings).toMatchObject({ api_key: 'abc123', signed_callbacks: true });
    const callback = `${app.url}${new URL(entry.callback_url).pathname}`;
    const receipt = {
      messageId: 'cli-unknown-1',
      status: 'delivered',
      timestamp: String(Math.floor(Date.now() / 1000)),
    };
    expect((await postJson(callback, receipt)).status).toBe(403);
    expect((await postJson(callback, vonageSigned(receipt, 'some-other-secret'))).status).toBe(403);
    expect((await postJson(callback, vonageSigned(receipt, VONAGE_SIGNATURE_SECRET))).status).toBe(204);

    // Set again without it: the secret is kept, as the API keeps an omitted one.
    const again = await herald([...vonage, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).settings).toMatchObject({ signed_callbacks: true });

    const empty = await herald([...vonage, '--signature-secret-file', '-'], { input: '\n' });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('signature secret is empty');
    const notTwilio = await herald([
      'transports',
      'sms',
      'set',
      'twilio',
      ...remote,
      '--signature-secret-file',
      join(dir, 'vonage-api-secret'),
    ]);
    expect(notTwilio.code).toBe(2);
    expect(notTwilio.stderr).toContain('--signature-secret-file is for vonage');
  });
});

describe('herald transports push (remote mode)', () => {
  it('sets webpush with generated keys and apns from a settings file and a key file', async () => {
    const web = await herald([
      'transports',
      'push',
      'set',
      'webpush',
      '--url',
      app.url,
      '--api-key',
      t.serviceKey,
      '--subject',
      'mailto:ops@cli.test',
      '--json',
    ]);
    expect(web.code, web.stderr).toBe(0);
    expect(JSON.parse(web.stdout).settings.public_key).toMatch(/^[A-Za-z0-9_-]{87}$/);
    const ios = await herald(
      [
        'transports',
        'push',
        'set',
        'apns',
        '--file',
        join(dir, 'apns.json'),
        '--private-key-file',
        join(dir, 'AuthKey.p8'),
      ],
      {
        env: { HERALD_URL: app.url, HERALD_API_KEY: t.serviceKey },
      },
    );
    expect(ios.code, ios.stderr).toBe(0);
    expect(ios.stdout).toMatch(/apns push transport saved/);
    const list = await herald(['transports', 'push', 'list', '--json'], {
      env: { HERALD_URL: app.url, HERALD_API_KEY: t.serviceKey },
    });
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).map((p: { provider: string }) => p.provider)).toEqual(['apns', 'webpush']);
  });

  it('reports the API validation error and a bad service key with exit 1', async () => {
    const bad = await herald([
      'transports',
      'push',
      'set',
      'apns',
      '--url',
      app.url,
      '--api-key',
      t.serviceKey,
      '--file',
      join(dir, 'apns.json'),
      '--team-id',
      'x',
      '--private-key-file',
      join(dir, 'AuthKey.p8'),
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/HTTP 422: body\.team_id/);
    const denied = await herald(['transports', 'push', 'list', '--url', app.url, '--api-key', 'sk_wrong']);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/HTTP 401/);
  });

  it('never prints a secret', () => {
    const all = outputs.map((o) => o.stdout + o.stderr).join('\n');
    expect(outputs.length).toBeGreaterThanOrEqual(8);
    for (const secret of [
      SMTP_PASS,
      VONAGE_API_SECRET,
      VONAGE_SIGNATURE_SECRET,
      ...apnsKey.split('\n').filter((l) => l.length > 40),
    ])
      expect(all).not.toContain(secret);
  });
});

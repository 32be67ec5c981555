// The key ring and its rotation: the ring re-reads its key file when it meets a key it does not know;
// `herald keys rotate|retire|list` run as real subprocesses while a server runs on the same data
// directory; sends keep working through rotation and retirement; a key removed by force leaves
// transports listed with credentials_unreadable (never a 500), sends skipped, and `herald status` warning.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import webpush from 'web-push';
import { startTestApp, type TestApp } from '../support/app.ts';
import { runCli } from '../support/cli.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';
import { startExpoPeer, type ExpoPeer } from '../support/expo-peer.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';
import {
  KeyRing,
  KeyUnavailableError,
  envelopeKeyId,
  generateKey,
  loadKeyRing,
  readKeyFile,
  writeKeyFile,
} from '../../server/base/crypto/keyring.ts';
import { query, queryOne, execute } from '../../server/base/db/sql.ts';
import { listKeys, retireKey, rotateKeys } from '../../server/app/keys.ts';
import { setDefaultSmtp } from '../../server/channels/email/email-transport.ts';
import { sendTenantEmail } from '../../server/channels/email/transport.ts';
import { sendPush } from '../../server/channels/push/providers.ts';
import { AppError } from '../../server/base/errors.ts';
import { testTempDir } from '../support/tmp.ts';
import { enqueueSystemEmail } from '../../server/channels/email/system-email-queue.ts';

describe('KeyRing', () => {
  it('re-reads its key file once for an unknown key id, then reports the key unavailable', () => {
    const dir = testTempDir('herald-ring-');
    writeKeyFile(dir, { active: 'k1', keys: { k1: generateKey() } });
    const server = loadKeyRing({ dataDir: dir });
    // Another process (herald keys rotate) adds k2 and encrypts with it.
    const file = readKeyFile(dir)!;
    writeKeyFile(dir, { active: 'k2', keys: { ...file.keys, k2: generateKey() } });
    const cli = loadKeyRing({ dataDir: dir });
    const sealed = cli.encrypt('s3cret', 'push_transports/t/apns/secrets');
    expect(envelopeKeyId(sealed)).toBe('k2');
    expect(server.decrypt(sealed, 'push_transports/t/apns/secrets')).toBe('s3cret');
    expect(server.activeKeyId).toBe('k2');
    const orphan = new KeyRing({ active: 'gone', keys: { gone: generateKey() } }).encrypt('x', 'a');
    expect(() => server.decrypt(orphan, 'a')).toThrow(KeyUnavailableError);
    expect(() => server.decrypt(orphan, 'a')).toThrow(KeyUnavailableError);
    expect(statSync(join(dir, 'keys.json')).mode & 0o777).toBe(0o600);
  });

  it('encrypts under the new active key once the key file changed on disk', () => {
    const dir = testTempDir('herald-ring-');
    writeKeyFile(dir, { active: 'k1', keys: { k1: generateKey() } });
    const ring = loadKeyRing({ dataDir: dir });
    expect(envelopeKeyId(ring.encrypt('a', 'b'))).toBe('k1');
    writeKeyFile(dir, { active: 'k9', keys: { ...readKeyFile(dir)!.keys, k9: generateKey() } });
    const sealed = ring.encrypt('a', 'b');
    expect(envelopeKeyId(sealed)).toBe('k9');
    // A key file edited into an invalid state does not break the keys already in memory.
    writeKeyFile(dir, { active: 'missing', keys: {} });
    expect(ring.decrypt(sealed, 'b')).toBe('a');
  });

  it('binds the row; rewrap moves the data key to the active key without touching the body', () => {
    const k1 = generateKey();
    const ring = new KeyRing({ active: 'k1', keys: { k1 } });
    const sealed = ring.encrypt('pw', 'email_transports/t1/password');
    expect(() => ring.decrypt(sealed, 'email_transports/t2/password')).toThrow();
    const rotated = new KeyRing({ active: 'k2', keys: { k1, k2: generateKey() } });
    const rewrapped = rotated.rewrap(sealed, 'email_transports/t1/password');
    expect(envelopeKeyId(rewrapped)).toBe('k2');
    expect(rewrapped.split('.')[3]).toBe(sealed.split('.')[3]);
    expect(rotated.decrypt(rewrapped, 'email_transports/t1/password')).toBe('pw');
    expect(() =>
      new KeyRing({ active: 'k2', keys: { k2: generateKey() } }).decrypt(sealed, 'email_transports/t1/password'),
    ).toThrow(KeyUnavailableError);
  });
});

describe('HERALD_ENCRYPTION_KEYS as the source', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app?.close();
  });

  it('rotate and retire refuse and explain that the environment is the source', async () => {
    const em = app.runtime.orm.em.fork();
    await expect(rotateKeys(em, app.runtime.keyRing, app.dataDir)).rejects.toThrow(/HERALD_ENCRYPTION_KEYS/);
    await expect(retireKey(em, app.runtime.keyRing, app.dataDir, 'test1')).rejects.toBeInstanceOf(AppError);
    expect((await listKeys(em, app.runtime.keyRing)).source).toBe('environment');
  });

  it('the CLI refuses too, with exit 1 and the reason', async () => {
    const env = { HERALD_ENCRYPTION_KEYS: `test1:${generateKey()}`, DATABASE_URL: app.database.url };
    const rotate = await runCli(['keys', 'rotate', '--data-dir', app.dataDir], { env });
    expect(rotate.code).toBe(1);
    expect(rotate.stderr).toMatch(/HERALD_ENCRYPTION_KEYS is set/);
  });
});

describe('rotation end to end, while the server runs', () => {
  let app: TestApp;
  let smtp: SmtpPeer;
  let expo: ExpoPeer;
  let t: TenantFixture;
  const SMTP_PASS = 'rotate-smtp-pass-77';
  const EXPO_TOKEN = 'rotate-expo-token-55';
  const cli = (args: string[]) =>
    runCli([...args, '--data-dir', app.dataDir], {
      env: { DATABASE_URL: app.database.url, HERALD_ENCRYPTION_KEYS: undefined, HERALD_HOME: undefined },
    });
  const keyIdOf = async (table: string, column: string, where = 'true') =>
    (
      await query<{ k: string }>(
        app.runtime.orm.em.fork(),
        `SELECT split_part(${column}, '.', 2) AS k FROM ${table} WHERE ${where}`,
      )
    ).map((r) => r.k);

  const sendsWork = async () => {
    const em = app.runtime.orm.em.fork();
    const mail = await sendTenantEmail(app.runtime, em, t.tenantId, {
      to: 'ann@example.test',
      subject: 's',
      html: '<p>h</p>',
      text: 'h',
    });
    expect(mail.status).toBe('sent');
    const push = await sendPush(
      app.runtime,
      em,
      t.tenantId,
      { provider: 'expo', token: 'ExponentPushToken[r1]' },
      { title: 't', body: 'b' },
    );
    expect(push.status).toBe('sent');
    const test = await app.request('POST', '/v1/email-transport/test', {
      token: t.serviceKey,
      body: { to: 'ops@example.test' },
    });
    expect(test.body).toMatchObject({ ok: true });
  };

  beforeAll(async () => {
    smtp = await startSmtpPeer({ auth: { user: 'u', pass: SMTP_PASS } });
    expo = await startExpoPeer({ accessToken: EXPO_TOKEN });
    app = await startTestApp({
      keyFile: { active: 'k1', keys: { k1: generateKey() } },
      config: { providers: { expoUrl: expo.url } },
    });
    t = await createTenantFixture(app, 'Rotate');
    const put = (path: string, body: unknown) => app.request('PUT', path, { token: t.serviceKey, body });
    expect(
      (
        await put('/v1/email-transport', {
          host: '127.0.0.1',
          port: smtp.port,
          username: 'u',
          password: SMTP_PASS,
          from_email: 'n@rotate.test',
        })
      ).status,
    ).toBe(200);
    expect((await put('/v1/push-transport/expo', { access_token: EXPO_TOKEN })).status).toBe(200);
    expect((await put('/v1/push-transport/webpush', { subject: 'mailto:ops@rotate.test' })).status).toBe(200);
    await setDefaultSmtp(app.runtime, app.runtime.orm.em.fork(), {
      host: '127.0.0.1',
      port: smtp.port,
      secure: false,
      username: 'u',
      password: SMTP_PASS,
    });
  });
  afterAll(async () => {
    await app?.close();
    await smtp?.close();
    await expo?.close();
  });

  it('keys list shows the active key and what it protects', async () => {
    const res = await cli(['keys', 'list', '--json']);
    expect(res.code, res.stderr).toBe(0);
    const listing = JSON.parse(res.stdout);
    expect(listing.source).toBe('key_file');
    // email password, expo + webpush secrets, default SMTP, token signing key
    expect(listing.keys).toEqual([{ id: 'k1', active: true, ciphertexts: 5 }]);
  });

  it('rotate adds an active key and re-wraps every secret; the running server keeps sending', async () => {
    const res = await cli(['keys', 'rotate', '--json', '--batch-size', '2']);
    expect(res.code, res.stderr).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out).toMatchObject({ added: true, rewrapped: 5, unreadable: 0 });
    const file = JSON.parse(readFileSync(join(app.dataDir, 'keys.json'), 'utf8'));
    expect(file.active).toBe(out.active);
    expect(Object.keys(file.keys).sort()).toEqual(['k1', out.active].sort());
    expect(statSync(join(app.dataDir, 'keys.json')).mode & 0o777).toBe(0o600);
    expect(
      new Set([
        ...(await keyIdOf('email_transports', 'password_ciphertext')),
        ...(await keyIdOf('push_transports', 'secrets_ciphertext')),
      ]),
    ).toEqual(new Set([out.active]));
    await sendsWork();
    // New secrets written by the server now use the new key.
    await app.request('PUT', '/v1/push-transport/expo', { token: t.serviceKey, body: { access_token: EXPO_TOKEN } });
    expect(await keyIdOf('push_transports', 'secrets_ciphertext', `provider = 'expo'`)).toEqual([out.active]);
  });

  it('retire removes the old key once nothing uses it; sends still work', async () => {
    const res = await cli(['keys', 'retire', 'k1']);
    expect(res.code, res.stderr).toBe(0);
    expect(Object.keys(JSON.parse(readFileSync(join(app.dataDir, 'keys.json'), 'utf8')).keys)).toHaveLength(1);
    await sendsWork();
    await expect(
      retireKey(app.runtime.orm.em.fork(), app.runtime.keyRing, app.dataDir, readKeyFile(app.dataDir)!.active),
    ).rejects.toThrow(/active key/);
  });

  it('retire refuses a key still in use; rotate --resume finishes an interrupted rotation', async () => {
    const before = readKeyFile(app.dataDir)!;
    const old = before.active;
    // An interrupted rotation: the new key is active, nothing re-wrapped yet.
    writeKeyFile(app.dataDir, { active: 'k3', keys: { ...before.keys, k3: generateKey() } });
    const em = app.runtime.orm.em.fork();
    await expect(retireKey(em, app.runtime.keyRing, app.dataDir, old)).rejects.toThrow(/still protects 5 secret/);
    const listed = await listKeys(em, app.runtime.keyRing);
    expect(listed.keys.find((k) => k.id === old)!.ciphertexts).toBe(5);
    const resumed = await cli(['keys', 'rotate', '--resume', '--json']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ active: 'k3', added: false, rewrapped: 5 });
    expect(await retireKey(em, app.runtime.keyRing, app.dataDir, old)).toEqual({ id: old, orphaned: 0 });
    await sendsWork();
  });

  it('a key removed by force leaves transports listed as credentials_unreadable, sends skipped, answers 200 and a status warning', async () => {
    const before = readKeyFile(app.dataDir)!;
    writeKeyFile(app.dataDir, { active: 'k4', keys: { ...before.keys, k4: generateKey() } });
    // Force must never orphan the token signing key: Herald could not start any more.
    await expect(
      retireKey(app.runtime.orm.em.fork(), app.runtime.keyRing, app.dataDir, 'k3', { force: true }),
    ).rejects.toThrow(/token_signing_key/);
    // Re-wrap just the install secrets (as an interrupted rotation would have), then force.
    const ring = loadKeyRing({ dataDir: app.dataDir });
    const em = app.runtime.orm.em.fork();
    for (const row of await query<{ name: string; ciphertext: string }>(
      em,
      `SELECT name, ciphertext FROM install_secrets`,
    )) {
      await execute(em, `UPDATE install_secrets SET ciphertext = $1 WHERE name = $2`, [
        ring.rewrap(row.ciphertext, `install_secrets/${row.name}`),
        row.name,
      ]);
    }
    const noConfirm = await cli(['keys', 'retire', 'k3', '--force']);
    expect(noConfirm.code).toBe(2);
    expect(noConfirm.stderr).toMatch(/--yes/);
    const forced = await cli(['keys', 'retire', 'k3', '--force', '--yes']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toMatch(/3 secret\(s\).*unreadable/);

    const list = await app.request('GET', '/v1/push-transport', { token: t.serviceKey });
    expect(list.status).toBe(200);
    expect(
      list.body.map((p: { provider: string; credentials_unreadable: boolean }) => [
        p.provider,
        p.credentials_unreadable,
      ]),
    ).toEqual([
      ['expo', true],
      ['webpush', true],
    ]);
    const email = await app.request('GET', '/v1/email-transport', { token: t.serviceKey });
    expect(email.status).toBe(200);
    expect(email.body).toMatchObject({ configured: true, credentials_unreadable: true });
    const test = await app.request('POST', '/v1/email-transport/test', {
      token: t.serviceKey,
      body: { to: 'ops@example.test' },
    });
    expect(test.status).toBe(200);
    expect(test.body).toMatchObject({ ok: false, error: expect.stringMatching(/^credentials_unreadable/) });
    const pushTest = await app.request('POST', '/v1/push-transport/expo/test', {
      token: t.serviceKey,
      body: { token: 'ExponentPushToken[r1]' },
    });
    expect(pushTest.status).toBe(200);
    expect(pushTest.body.ok).toBe(false);
    expect((await app.request('GET', '/v1/web-push/public-key', { token: t.contactToken })).status).toBe(200);

    const em2 = app.runtime.orm.em.fork();
    expect(
      await sendTenantEmail(app.runtime, em2, t.tenantId, { to: 'a@example.test', subject: 's', html: 'h', text: 'h' }),
    ).toEqual({ status: 'skipped', reason: 'credentials_unreadable' });
    expect(
      await sendPush(
        app.runtime,
        em2,
        t.tenantId,
        { provider: 'expo', token: 'ExponentPushToken[r1]' },
        { title: 't', body: 'b' },
      ),
    ).toEqual({
      status: 'skipped',
      reason: 'credentials_unreadable',
    });
    const sub = {
      endpoint: 'https://push.example.test/x',
      keys: { p256dh: webpush.generateVAPIDKeys().publicKey, auth: 'A'.repeat(22) },
    };
    expect(
      await sendPush(
        app.runtime,
        em2,
        t.tenantId,
        { provider: 'webpush', subscription: sub },
        { title: 't', body: 'b' },
      ),
    ).toEqual({
      status: 'skipped',
      reason: 'credentials_unreadable',
    });

    const status = await runCli(['status', '--json', '--data-dir', app.dataDir], {
      env: { DATABASE_URL: app.database.url, HERALD_ENCRYPTION_KEYS: undefined },
    });
    const warnings = JSON.parse(status.stdout).warnings as string[];
    expect(warnings.some((w) => /3 secret\(s\) are encrypted with key k3, which is not in the key ring/.test(w))).toBe(
      true,
    );
    expect(app.logs.some((l) => JSON.parse(l).status === 500)).toBe(false);

    // Setting the transport again makes it usable.
    await app.request('PUT', '/v1/push-transport/expo', { token: t.serviceKey, body: { access_token: EXPO_TOKEN } });
    const again = await app.request('GET', '/v1/push-transport', { token: t.serviceKey });
    expect(again.body.find((p: { provider: string }) => p.provider === 'expo').credentials_unreadable).toBe(false);
    const row = await queryOne<{ k: string }>(
      em2,
      `SELECT split_part(secrets_ciphertext, '.', 2) AS k FROM push_transports WHERE provider = 'expo'`,
    );
    expect(row!.k).toBe('k4');
  });
});

describe('a system email waiting in the queue through a rotation', () => {
  let smtp: SmtpPeer;
  let api: TestApp;
  let worker: TestApp | undefined;
  beforeAll(async () => {
    smtp = await startSmtpPeer();
    // An API-only process: no worker sends the email before the rotation.
    api = await startTestApp({
      role: 'api',
      keyFile: { active: 'k1', keys: { k1: generateKey() } },
      config: { smtpUrl: smtp.url },
    });
  });
  afterAll(async () => {
    await worker?.close();
    await api?.close();
    await smtp?.close();
  });

  it('has its sealed link token re-wrapped, so the old key can be retired and the email still goes out', async () => {
    const em = api.runtime.orm.em.fork();
    const counted = async () => (await listKeys(em, api.runtime.keyRing)).keys.find((k) => k.id === 'k1')!.ciphertexts;
    const before = await counted();
    await em
      .fork()
      .transactional((tx) =>
        enqueueSystemEmail(api.runtime, tx, { kind: 'reset', to: 'queued@example.org', token: 'queued-link-token' }),
      );
    const sealed = async () =>
      (await queryOne<{ sealed: string }>(
        em,
        `SELECT data->>'sealed_token' AS sealed FROM pgboss.job WHERE name = 'system-email' AND data->>'to' = 'queued@example.org'`,
      ))!.sealed;
    expect(envelopeKeyId(await sealed())).toBe('k1');
    expect(await counted()).toBe(before + 1);

    const rotated = await rotateKeys(em, api.runtime.keyRing, api.dataDir);
    expect(envelopeKeyId(await sealed())).toBe(rotated.activeKeyId);
    await retireKey(em, api.runtime.keyRing, api.dataDir, 'k1');
    expect(Object.keys(readKeyFile(api.dataDir)!.keys)).toEqual([rotated.activeKeyId]);

    // A worker with only the new key sends it, with the link intact.
    worker = await startTestApp({
      role: 'worker',
      http: false,
      database: api.database,
      keyFile: readKeyFile(api.dataDir)!,
      config: { smtpUrl: smtp.url },
    });
    const mail = await smtp.waitFor((m) => m.envelope.to.includes('queued@example.org'));
    expect(mail.parsed.text).toContain('queued-link-token');
  });
});

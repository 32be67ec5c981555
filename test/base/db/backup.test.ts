// herald backup / herald restore as an operator runs them: an online backup of a running embedded
// install, restored into a fresh data directory that then serves the same data.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../support/cli.ts';
import { eventually } from '../../support/eventually.ts';
import { postgresProcessesFor, startHerald, type HeraldProcess } from '../../support/herald-process.ts';
import { freePort } from '../../../server/base/db/embedded-postgres.ts';
import { admin, withDatabase } from '../../support/global-setup.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const ENV = {
  DATABASE_URL: undefined,
  HERALD_DATABASE_URL: undefined,
  HERALD_EMBEDDED_POSTGRES_PORT: undefined,
  HERALD_HOME: undefined,
  HERALD_ENCRYPTION_KEYS: undefined,
};

function tempRoot(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-backup-'));
  chmodSync(dir, 0o711); // the embedded cluster runs as 'postgres' when tests run as root
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function start(dataDir: string): Promise<HeraldProcess> {
  const herald = await startHerald(['--data-dir', dataDir, '--port', String(await freePort())], ENV);
  cleanups.push(() => herald.stop('SIGKILL'));
  return herald;
}

describe('backup and restore', { timeout: 300_000 }, () => {
  it('an online backup restores into a fresh data dir that serves the same data; keys only with --include-keys', async () => {
    const root = tempRoot();
    const source = join(root, 'source');
    const init = await runCli(
      ['init', '--yes', '--data-dir', source, '--tenant', 'Acme', '--owner-email', 'owner@acme.test', '--json'],
      { env: ENV },
    );
    expect(init.code, init.stderr).toBe(0);
    const tenantId = JSON.parse(init.stdout).tenant_id as string;
    const issued = await runCli(['api-keys', 'issue', '--tenant', tenantId, '--data-dir', source, '--json'], {
      env: ENV,
    });
    expect(issued.code, issued.stderr).toBe(0);
    const key = JSON.parse(issued.stdout).key as string;

    const herald = await start(source);
    const call = async (base: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json().catch(() => null)) as any };
    };
    expect(
      (
        await call(herald.url, 'POST', '/v1/notification-types', {
          key: 'ping',
          name: 'Ping',
          channel_defaults: { inbox: true, email: false, push: false, web_push: false },
          opt_out: true,
          variables: [],
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await call(herald.url, 'POST', '/v1/inbox-templates', {
          notification_type_key: 'ping',
          title: 'Ping {{ n }}',
          content: 'ping',
        })
      ).status,
    ).toBe(201);
    const contact = await call(herald.url, 'POST', '/v1/contacts', {
      external_id: 'ann',
      name: 'Ann',
      email: 'ann@example.test',
    });
    expect(contact.status).toBe(201);
    const triggered = await call(herald.url, 'POST', '/v1/notifications', {
      type: 'ping',
      recipients: ['ann'],
      variables: { n: 1 },
    });
    expect(triggered.status).toBe(202);
    const eventId = triggered.body.events[0].event_id as string;
    await eventually(
      async () => (await call(herald.url, 'GET', `/v1/notifications/${eventId}`)).body.status === 'delivered',
      { timeoutMs: 30_000 },
    );
    const original = (await call(herald.url, 'GET', `/v1/notifications/${eventId}`)).body;

    // Online, while Herald runs: without the keys, then with them.
    const plain = join(root, 'plain.herald.gz');
    const backup = await runCli(['backup', '--data-dir', source, '--out', plain, '--json'], { env: ENV });
    expect(backup.code, backup.stderr).toBe(0);
    expect(JSON.parse(backup.stdout)).toMatchObject({
      keys_included: false,
      tables: expect.any(Number),
      rows: expect.any(Number),
    });
    expect(statSync(plain).mode & 0o777).toBe(0o600);
    const keyFile = readFileSync(join(source, 'keys.json'), 'utf8');
    const ring = JSON.parse(keyFile) as { active: string; keys: Record<string, string> };
    const activeKey = ring.keys[ring.active]!;
    expect(gunzipSync(readFileSync(plain)).toString('utf8')).not.toContain(activeKey);
    const full = join(root, 'full.herald.gz');
    expect((await runCli(['backup', '--data-dir', source, '--out', full, '--include-keys'], { env: ENV })).code).toBe(
      0,
    );
    expect(gunzipSync(readFileSync(full)).toString('utf8')).toContain(activeKey);

    // Restore into a fresh directory, on a port of its own, while the source still runs.
    const restored = join(root, 'restored');
    const restore = await runCli(['restore', full, '--data-dir', restored, '--json'], { env: ENV });
    expect(restore.code, restore.stderr).toBe(0);
    expect(JSON.parse(restore.stdout)).toMatchObject({ keys_restored: true });
    expect(JSON.parse(readFileSync(join(restored, 'herald.json'), 'utf8')).embeddedPostgresPort).not.toBe(
      JSON.parse(readFileSync(join(source, 'herald.json'), 'utf8')).embeddedPostgresPort,
    );
    const copy = await start(restored);
    expect((await fetch(`${copy.url}/readyz`)).status).toBe(200);
    expect((await call(copy.url, 'GET', `/v1/notifications/${eventId}`)).body).toEqual(original);
    expect((await call(copy.url, 'GET', `/v1/contacts/${contact.body.id}`)).body).toEqual(contact.body);
    // The restored install works, not just reads: a new trigger is delivered there.
    const again = await call(copy.url, 'POST', '/v1/notifications', {
      type: 'ping',
      recipients: ['ann'],
      variables: { n: 2 },
    });
    expect(again.status).toBe(202);
    await eventually(
      async () =>
        (await call(copy.url, 'GET', `/v1/notifications/${again.body.events[0].event_id}`)).body.status === 'delivered',
      { timeoutMs: 30_000 },
    );
    expect(await copy.stop()).toBe(0);
    expect(await herald.stop()).toBe(0);
    expect(postgresProcessesFor(restored)).toEqual([]);

    // Without keys in the backup: restored, and told to bring the key file.
    const bare = join(root, 'bare');
    const bareRestore = await runCli(['restore', plain, '--data-dir', bare], { env: ENV });
    expect(bareRestore.code, bareRestore.stderr).toBe(0);
    expect(bareRestore.stdout).toMatch(/keys\.json/);
    expect(existsSync(join(bare, 'keys.json'))).toBe(false);

    // Never over an existing install, and never from something that is not a backup.
    expect((await runCli(['restore', full, '--data-dir', restored], { env: ENV })).code).toBe(2);
    const junk = join(root, 'junk.gz');
    writeFileSync(junk, 'not a backup');
    const empty = join(root, 'empty');
    mkdirSync(empty);
    const refused = await runCli(['restore', junk, '--data-dir', empty], { env: ENV });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/not a readable Herald backup/);
  });
});

describe('backup and restore on an external database', { timeout: 300_000 }, () => {
  async function emptyDatabase(): Promise<string> {
    const name = `herald_backup_${Math.random().toString(36).slice(2, 10)}`;
    await admin(inject('adminUrl'), `CREATE DATABASE "${name}"`);
    cleanups.push(() => admin(inject('adminUrl'), `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    return withDatabase(inject('adminUrl'), name);
  }

  it('backs up DATABASE_URL and restores into another empty database that then holds the same tenants and keys', async () => {
    const root = tempRoot();
    const source = join(root, 'source');
    const env = { ...ENV, HERALD_EMBEDDED_POSTGRES_PORT: undefined };
    const init = await runCli(
      [
        'init',
        '--yes',
        '--data-dir',
        source,
        '--database-url',
        await emptyDatabase(),
        '--tenant',
        'Ext',
        '--owner-email',
        'owner@ext.test',
        '--json',
      ],
      { env },
    );
    expect(init.code, init.stderr).toBe(0);
    const tenantId = JSON.parse(init.stdout).tenant_id as string;
    expect(
      (await runCli(['api-keys', 'issue', '--tenant', tenantId, '--name', 'ci', '--data-dir', source], { env })).code,
    ).toBe(0);
    const file = join(root, 'ext.herald.gz');
    const backup = await runCli(['backup', '--data-dir', source, '--out', file, '--include-keys'], { env });
    expect(backup.code, backup.stderr).toBe(0);
    // The backup does not carry the source's database URL (it may hold a password).
    expect(gunzipSync(readFileSync(file)).toString('utf8')).not.toMatch(/databaseUrl/);

    const target = join(root, 'target');
    const restore = await runCli(
      ['restore', file, '--data-dir', target, '--database-url', await emptyDatabase(), '--json'],
      { env },
    );
    expect(restore.code, restore.stderr).toBe(0);
    const read = async (dataDir: string, args: string[]) => {
      const r = await runCli([...args, '--json', '--data-dir', dataDir], { env });
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout);
    };
    expect(await read(target, ['tenants', 'list'])).toEqual(await read(source, ['tenants', 'list']));
    expect(await read(target, ['api-keys', 'list', '--tenant', tenantId])).toEqual(
      await read(source, ['api-keys', 'list', '--tenant', tenantId]),
    );
  });
});

// Host-only commands as an operator runs them, as subprocesses on an external database: `herald status`
// of a Herald started on a port only its environment names, and `herald start` of a restored install
// whose key file stayed behind.
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, copyFileSync, existsSync } from 'node:fs';
import { inject } from 'vitest';
import { join } from 'node:path';
import { runCli } from '../support/cli.ts';
import { createTestDatabase } from '../support/database.ts';
import { admin, withDatabase } from '../support/global-setup.ts';
import { startHerald, type HeraldProcess } from '../support/herald-process.ts';
import { runTempDir } from '../support/tmp.ts';
import { OPERATOR_ENV } from '../support/operator-shell.ts';
import { freePort } from '../../server/base/db/embedded-postgres.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

// herald.json names the database.
const ENV = OPERATOR_ENV;

/** A new, empty database (what `herald restore --database-url` restores into). */
async function emptyDatabase(): Promise<string> {
  const name = `herald_host_${Math.random().toString(36).slice(2, 10)}`;
  const adminUrl = inject('adminUrl');
  await admin(adminUrl, `CREATE DATABASE "${name}"`);
  cleanups.push(() => admin(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  return withDatabase(adminUrl, name);
}

function tempDataDir(): string {
  const root = runTempDir('herald-host-');
  chmodSync(root, 0o711);
  return join(root, 'data');
}

/** A single-tenant install on its own database, initialised without --port (as install.sh does). */
async function initInstall(tenant: string): Promise<{ dataDir: string; databaseUrl: string }> {
  const database = await createTestDatabase();
  cleanups.push(() => database.drop());
  const dataDir = tempDataDir();
  const init = await runCli(
    [
      'init',
      '--yes',
      '--data-dir',
      dataDir,
      '--database-url',
      database.url,
      '--tenant',
      tenant,
      '--owner-email',
      `owner@${tenant.toLowerCase()}.test`,
    ],
    { env: ENV },
  );
  expect(init.code, init.stderr).toBe(0);
  return { dataDir, databaseUrl: database.url };
}

async function start(dataDir: string, env: Record<string, string | undefined> = {}): Promise<HeraldProcess> {
  const herald = await startHerald(['--data-dir', dataDir], { ...ENV, ...env });
  cleanups.push(() => herald.stop('SIGKILL'));
  return herald;
}

describe('herald status', { timeout: 120_000 }, () => {
  it('of a Herald started with HERALD_PORT (herald.json names no port) probes that port: healthy, exit 0', async () => {
    const { dataDir } = await initInstall('Ported');
    const port = await freePort();
    const herald = await start(dataDir, { HERALD_PORT: String(port) });
    expect(herald.url).toBe(`http://127.0.0.1:${port}`);

    const human = await runCli(['status', '--data-dir', dataDir], { env: ENV });
    expect(human.code, human.stdout).toBe(0);
    expect(human.stdout).toContain(`listening    http://127.0.0.1:${port} (up)`);
    const json = await runCli(['status', '--json', '--data-dir', dataDir], { env: ENV });
    expect(json.code, json.stdout).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      healthy: true,
      http: { url: `http://127.0.0.1:${port}`, reachable: true },
    });

    // Stopped, it probes the configured address again, and says so.
    expect(await herald.stop()).toBe(0);
    const down = await runCli(['status', '--data-dir', dataDir], { env: ENV });
    expect(down.code).toBe(1);
    expect(down.stdout).toContain('listening    http://127.0.0.1:8025 (not answering)');
  });
});

describe('herald start of a restored install without its key file', { timeout: 180_000 }, () => {
  it('names the key file to copy back or HERALD_ENCRYPTION_KEYS, not herald init (status too); with the key file back it starts', async () => {
    const { dataDir } = await initInstall('Restored');
    // A first start stores the install's token-signing key, encrypted with the key ring.
    const first = await start(dataDir, { HERALD_PORT: String(await freePort()) });
    expect(await first.stop()).toBe(0);
    const backupFile = join(runTempDir('herald-backup-'), 'herald.gz');
    const backup = await runCli(['backup', '--data-dir', dataDir, '--out', backupFile], { env: ENV });
    expect(backup.code, backup.stderr).toBe(0);

    const restored = tempDataDir();
    const restore = await runCli(
      ['restore', backupFile, '--data-dir', restored, '--database-url', await emptyDatabase()],
      { env: ENV },
    );
    expect(restore.code, restore.stderr).toBe(0);
    expect(existsSync(join(restored, 'keys.json'))).toBe(false);

    const refused = await runCli(['start', '--data-dir', restored, '--port', String(await freePort())], { env: ENV });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`copy the original keys.json to ${join(restored, 'keys.json')}`);
    expect(refused.stderr).toContain('HERALD_ENCRYPTION_KEYS');
    expect(refused.stderr).not.toMatch(/run 'herald init'/);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(join(restored, 'keys.json'))).toBe(false);
    const status = await runCli(['status', '--data-dir', restored], { env: ENV });
    expect(status.code).toBe(1);
    expect(status.stdout).toContain(`copy the original keys.json to ${join(restored, 'keys.json')}`);

    copyFileSync(join(dataDir, 'keys.json'), join(restored, 'keys.json'));
    const again = await start(restored, { HERALD_PORT: String(await freePort()) });
    expect((await fetch(`${again.url}/readyz`)).status).toBe(200);
    expect(await again.stop()).toBe(0);
  });

  it('of a new database without a key file still says to run herald init', async () => {
    const dataDir = tempDataDir();
    const refused = await runCli(['start', '--port', String(await freePort())], {
      env: { ...ENV, HERALD_HOME: dataDir, DATABASE_URL: await emptyDatabase() },
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/run 'herald init'/);
  });
});

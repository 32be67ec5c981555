// Host-only commands as an operator runs them, as subprocesses on an external database: `herald status`
// of a Herald started on a port only its environment names, and `herald start` of a restored install
// whose key file stayed behind.
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../support/cli.ts';
import { createTestDatabase } from '../support/database.ts';
import { startHerald, type HeraldProcess } from '../support/herald-process.ts';
import { runTempDir } from '../support/tmp.ts';
import { freePort } from '../../server/base/db/embedded-postgres.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

// The shell of an operator: no HERALD_* settings, no DATABASE_URL (herald.json names the database).
const ENV = {
  DATABASE_URL: undefined,
  HERALD_DATABASE_URL: undefined,
  HERALD_HOME: undefined,
  HERALD_PORT: undefined,
  HERALD_HOST: undefined,
  HERALD_ENCRYPTION_KEYS: undefined,
};

/** A single-tenant install on its own database, initialised without --port (as install.sh does). */
async function initInstall(tenant: string): Promise<{ dataDir: string; databaseUrl: string }> {
  const database = await createTestDatabase();
  cleanups.push(() => database.drop());
  const root = runTempDir('herald-host-');
  chmodSync(root, 0o711);
  const dataDir = join(root, 'data');
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

// The embedded PostgreSQL under an operator's hands, as subprocesses: a second install on the same host,
// a kill -9 of Herald (the orphaned postmaster), a postmaster that dies while Herald runs, status exit
// codes, and no constant credential anywhere.
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { runCli } from '../support/cli.ts';
import { eventually } from '../support/eventually.ts';
import {
  isAlive,
  postgresProcessesFor,
  postmasterPid,
  startHerald,
  type HeraldProcess,
} from '../support/herald-process.ts';
import { freePort } from '../../server/base/db/embedded-postgres.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

// No HERALD_EMBEDDED_POSTGRES_PORT: each init chooses (and records) its own port, as an operator's does.
const ENV = {
  DATABASE_URL: undefined,
  HERALD_DATABASE_URL: undefined,
  HERALD_EMBEDDED_POSTGRES_PORT: undefined,
  HERALD_HOME: undefined,
  HERALD_LOG_LEVEL: 'info',
};

function tempDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-ops-'));
  chmodSync(dir, 0o711); // the embedded cluster runs as 'postgres' when tests run as root
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'data');
}

async function init(dataDir: string, tenant: string, extra: string[] = []) {
  const r = await runCli(
    [
      'init',
      '--yes',
      '--data-dir',
      dataDir,
      '--tenant',
      tenant,
      '--owner-email',
      `owner@${tenant.toLowerCase()}.test`,
      '--port',
      String(await freePort()),
      '--json',
      ...extra,
    ],
    { env: ENV },
  );
  return { ...r, json: r.code === 0 ? JSON.parse(r.stdout) : null };
}

async function start(dataDir: string): Promise<HeraldProcess> {
  const herald = await startHerald(['--data-dir', dataDir], ENV);
  cleanups.push(() => herald.stop('SIGKILL'));
  return herald;
}

const configOf = (dataDir: string) => JSON.parse(readFileSync(join(dataDir, 'herald.json'), 'utf8'));
const clusterDir = (dataDir: string) => join(dataDir, 'postgres');

describe('a second install on the same host', { timeout: 240_000 }, () => {
  it('gets its own cluster on its own port, with its own password; a port taken by another cluster is refused, never adopted', async () => {
    const a = tempDataDir();
    const initA = await init(a, 'AcmeA');
    expect(initA.code, initA.stderr).toBe(0);
    const herald = await start(a);
    const portA = configOf(a).embeddedPostgresPort;
    expect(portA).toEqual(expect.any(Number));
    const secretA = join(a, 'embedded-postgres.json');
    expect(statSync(secretA).mode & 0o777).toBe(0o600);

    const b = tempDataDir();
    const initB = await init(b, 'AcmeB');
    expect(initB.code, initB.stderr).toBe(0);
    expect(initB.json).toMatchObject({ tenant_name: 'AcmeB', owner_email: 'owner@acmeb.test', created: true });
    expect(initB.json.tenant_id).not.toBe(initA.json.tenant_id);
    expect(configOf(b).embeddedPostgresPort).not.toBe(portA);
    const passwordA = JSON.parse(readFileSync(secretA, 'utf8')).password;
    const passwordB = JSON.parse(readFileSync(join(b, 'embedded-postgres.json'), 'utf8')).password;
    expect(passwordA).not.toBe(passwordB);
    // B's password does not open A's cluster.
    const intruder = new pg.Client({
      host: '127.0.0.1',
      port: portA,
      user: 'postgres',
      password: passwordB,
      database: 'herald',
    });
    await expect(intruder.connect()).rejects.toThrow(/password authentication failed/);
    await intruder.end().catch(() => undefined);

    // A third install told to use A's port: one clear sentence, exit 1, no tenant made anywhere.
    const c = tempDataDir();
    const initC = await init(c, 'AcmeC', ['--embedded-postgres-port', String(portA)]);
    expect(initC.code).toBe(1);
    expect(initC.stderr).toMatch(new RegExp(`port ${portA} .*in use`));
    expect(initC.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(join(clusterDir(c), 'PG_VERSION'))).toBe(false);

    // A still serves its own data.
    expect((await fetch(`${herald.url}/readyz`)).status).toBe(200);
    const listA = await runCli(['tenants', 'list', '--json', '--data-dir', a], { env: ENV });
    expect(JSON.parse(listA.stdout).map((t: { name: string }) => t.name)).toEqual(['AcmeA']);
    expect(await herald.stop()).toBe(0);
    expect(postgresProcessesFor(a)).toEqual([]);
  });
});

describe('a copied data directory', { timeout: 240_000 }, () => {
  it("runs its own cluster: the original's running postmaster, named in the copied postmaster.pid, is neither adopted nor disturbed", async () => {
    const original = tempDataDir();
    const initialised = await init(original, 'Original');
    expect(initialised.code, initialised.stderr).toBe(0);
    const first = await start(original);
    const originalPid = postmasterPid(clusterDir(original))!;
    const copy = tempDataDir();
    execFileSync('cp', ['-a', original, copy]);
    // The copy names the original's postmaster in its postmaster.pid; give it ports of its own.
    expect(postmasterPid(clusterDir(copy))).toBe(originalPid);
    const config = { ...configOf(copy), embeddedPostgresPort: await freePort(), port: await freePort() };
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(copy, 'herald.json'), JSON.stringify(config));
    const second = await start(copy);
    expect((await fetch(`${second.url}/readyz`)).status).toBe(200);
    const copyPid = postmasterPid(clusterDir(copy))!;
    expect(copyPid).not.toBe(originalPid);
    expect(isAlive(originalPid)).toBe(true);
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    expect(await second.stop()).toBe(0);
    expect(isAlive(originalPid)).toBe(true);
    expect(await first.stop()).toBe(0);
    await eventually(() => !isAlive(originalPid) && !isAlive(copyPid), { timeoutMs: 10_000 });
  });
});

describe('crashes', { timeout: 240_000 }, () => {
  it('after a kill -9 of Herald, the next start stops the orphaned postmaster and starts cleanly; a clean stop then leaves nothing running', async () => {
    const dataDir = tempDataDir();
    const initialised = await init(dataDir, 'Orphan');
    expect(initialised.code, initialised.stderr).toBe(0);
    const first = await start(dataDir);
    const orphan = postmasterPid(clusterDir(dataDir))!;
    expect(isAlive(orphan)).toBe(true);
    await first.stop('SIGKILL');
    // The postmaster outlives the killed process.
    expect(isAlive(orphan)).toBe(true);

    const second = await start(dataDir);
    expect((await fetch(`${second.url}/readyz`)).status).toBe(200);
    const fresh = postmasterPid(clusterDir(dataDir))!;
    expect(fresh).not.toBe(orphan);
    expect(isAlive(orphan)).toBe(false);
    expect(second.output()).toMatch(/orphaned postmaster/);

    expect(await second.stop('SIGTERM')).toBe(0);
    await eventually(() => postgresProcessesFor(dataDir).length === 0, { timeoutMs: 10_000 });
    expect(isAlive(fresh)).toBe(false);
  });

  it('a postmaster that dies while Herald runs is restarted; /healthz and /readyz answer 503 meanwhile, then 200', async () => {
    const dataDir = tempDataDir();
    const initialised = await init(dataDir, 'Supervised');
    expect(initialised.code, initialised.stderr).toBe(0);
    const herald = await start(dataDir);
    const before = postmasterPid(clusterDir(dataDir))!;
    const seen = new Set<number>();
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const res = await fetch(`${herald.url}/healthz`).catch(() => null);
        if (res) seen.add(res.status);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    process.kill(before, 'SIGKILL');
    const after = await eventually(
      () => {
        const pid = postmasterPid(clusterDir(dataDir));
        return pid && pid !== before && isAlive(pid) ? pid : false;
      },
      { timeoutMs: 30_000 },
    );
    await eventually(async () => (await fetch(`${herald.url}/readyz`)).status === 200, { timeoutMs: 30_000 });
    await eventually(async () => (await fetch(`${herald.url}/healthz`)).status === 200, { timeoutMs: 10_000 });
    polling = false;
    await poller;
    expect(after).not.toBe(before);
    expect(seen.has(503)).toBe(true);
    expect(herald.output()).toMatch(/the embedded PostgreSQL exited .*restarting it/);
    expect(herald.output()).toMatch(/database available again/);
    // It serves requests that need the database again, without a restart of Herald.
    const list = await runCli(['tenants', 'list', '--json', '--data-dir', dataDir], { env: ENV });
    expect(list.code, list.stderr).toBe(0);
    expect(await herald.stop()).toBe(0);
    await eventually(() => postgresProcessesFor(dataDir).length === 0, { timeoutMs: 10_000 });
  });
});

describe('herald status', { timeout: 240_000 }, () => {
  it('exit 2 for a missing or mistyped data dir, creating nothing; 1 while stopped (without starting the database); 0 while healthy', async () => {
    const dataDir = tempDataDir();
    const missing = await runCli(['status', '--data-dir', dataDir], { env: ENV });
    expect(missing.code).toBe(2);
    expect(missing.stdout).toMatch(/not initialised/);
    expect(existsSync(dataDir)).toBe(false);

    const empty = tempDataDir();
    rmSync(empty, { recursive: true, force: true });
    const { mkdirSync } = await import('node:fs');
    mkdirSync(empty);
    const mistyped = await runCli(['status', '--json', '--data-dir', empty], { env: ENV });
    expect(mistyped.code).toBe(2);
    expect(JSON.parse(mistyped.stdout)).toMatchObject({ initialised: false, healthy: false });
    expect(readdirSync(empty)).toEqual([]);

    const initialised = await init(dataDir, 'Status');
    expect(initialised.code, initialised.stderr).toBe(0);
    const stopped = await runCli(['status', '--json', '--data-dir', dataDir], { env: ENV });
    expect(stopped.code).toBe(1);
    expect(JSON.parse(stopped.stdout)).toMatchObject({
      initialised: true,
      healthy: false,
      database: { kind: 'embedded', reachable: false },
      http: { reachable: false },
    });
    expect(postgresProcessesFor(dataDir)).toEqual([]);

    const herald = await start(dataDir);
    const healthy = await runCli(['status', '--json', '--data-dir', dataDir], { env: ENV });
    expect(healthy.code, healthy.stdout).toBe(0);
    expect(JSON.parse(healthy.stdout)).toMatchObject({
      healthy: true,
      database: { reachable: true },
      http: { reachable: true },
      migrations: { pending: [] },
    });
    const human = await runCli(['status', '--data-dir', dataDir], { env: ENV });
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^healthy$/m);
    expect(await herald.stop()).toBe(0);
    const down = await runCli(['status', '--data-dir', dataDir], { env: ENV });
    expect(down.code).toBe(1);
    expect(down.stdout).toMatch(/UNHEALTHY/);
  });
});

describe('no constant credential', () => {
  it('the code, scripts, templates and README name no fixed database password', () => {
    const root = new URL('../..', import.meta.url).pathname;
    const files = execFileSync(
      'git',
      ['ls-files', 'server', 'cli', 'bin', 'migrations', 'templates', 'docs', 'install.sh', 'README.md'],
      { cwd: root, encoding: 'utf8' },
    )
      .split('\n')
      .filter(Boolean);
    expect(files.length).toBeGreaterThan(50);
    const offenders: string[] = [];
    for (const file of files) {
      const text = readFileSync(join(root, file), 'utf8');
      // A URL with a literal password (other than the documentation's placeholders), the old fixed
      // one, or a password option given as a literal.
      for (const m of text.matchAll(/postgres(?:ql)?:\/\/[^\s:/@'"`]+:([^\s@'"`]+)@/g)) {
        if (!['pass', 'secret', '***', '...'].includes(m[1]!) && !m[1]!.startsWith('${'))
          offenders.push(`${file}: database URL with a literal password`);
      }
      if (/herald-embedded/.test(text)) offenders.push(`${file}: the old fixed password`);
      if (/password:\s*['"][^'"]{3,}['"]/.test(text) && /postgres/i.test(text))
        offenders.push(`${file}: literal password option`);
    }
    expect(offenders).toEqual([]);
  });
});

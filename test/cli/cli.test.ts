// The herald executable as an admin uses it: init, start, status, migrate, signals and exit codes,
// on the embedded PostgreSQL and on an external one (DATABASE_URL).
import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { validate } from '@readme/openapi-parser';
import { HERALD_BIN, runCli } from '../support/cli.ts';
import {
  postgresProcessesFor,
  startHerald as startHeraldProcess,
  type HeraldProcess,
} from '../support/herald-process.ts';
import { admin, withDatabase } from '../support/global-setup.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function tempDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-cli-'));
  chmodSync(dir, 0o711); // the embedded cluster runs as 'postgres' when tests run as root
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'data');
}

async function startHerald(args: string[], env: Record<string, string>): Promise<HeraldProcess> {
  const herald = await startHeraldProcess(args, env);
  cleanups.push(async () => {
    await herald.stop('SIGKILL');
  });
  return herald;
}

describe('herald (no database needed)', { timeout: 120_000 }, () => {
  it('--version prints the package version and exits 0', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(version);
  });

  /** The repository's modules (relative paths) and the packages a CLI run loads. */
  async function loadedBy(
    args: string[],
  ): Promise<{ code: number | null; own: string[]; packages: string[]; builtins: string[] }> {
    const trace = join(mkdtempSync(join(tmpdir(), 'herald-trace-')), 'modules.txt');
    cleanups.push(() => rmSync(dirname(trace), { recursive: true, force: true }));
    const hook = fileURLToPath(new URL('../support/module-trace.ts', import.meta.url));
    // No data directory and no database: these commands need neither.
    const env = {
      HERALD_MODULE_TRACE: trace,
      NODE_OPTIONS: `--import ${hook}`,
      HERALD_HOME: join(dirname(trace), 'absent'),
      DATABASE_URL: undefined,
    };
    const r = await runCli(args, { env });
    const lines = readFileSync(trace, 'utf8').split('\n');
    const urls = lines.filter((u) => u.startsWith('file:'));
    const builtins = lines.filter((u) => u.startsWith('builtin:')).map((u) => u.slice('builtin:'.length));
    const root = new URL('../../', import.meta.url).href;
    const own = urls
      .filter((u) => u.startsWith(root) && !u.includes('/node_modules/') && !u.includes('/test/support/'))
      .map((u) => u.slice(root.length));
    const packages = [...new Set(urls.flatMap((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1] ?? []))];
    return { code: r.code, own, packages, builtins };
  }

  it('--version loads no server module and no package', async () => {
    const r = await loadedBy(['--version']);
    expect(r.code).toBe(0);
    expect(r.own.filter((path) => path.startsWith('server/'))).toEqual(['server/base/errors.ts']);
    expect(r.packages).toEqual([]);
  });

  it('send --help and send load the CLI and its HTTP client only: no server module but two leaves, no database', async () => {
    const help = await loadedBy(['send', '--help']);
    expect(help.code).toBe(0);
    const send = await loadedBy([
      'send',
      '--type',
      'deploy',
      '--to',
      'u1',
      '--url',
      'http://127.0.0.1:9',
      '--api-key',
      'sk_unreachable',
    ]);
    expect(send.code).toBe(1);
    for (const run of [help, send]) {
      // The error table and the statuses are leaves with no imports of their own.
      expect(run.own.filter((path) => path.startsWith('server/')).sort()).toEqual([
        'server/base/errors.ts',
        'server/base/statuses.ts',
      ]);
      expect(run.packages).toEqual(['commander']);
    }
    // Its requests go through node:http: fetch's implementation (undici) costs more than the rest of the start-up.
    expect(send.builtins).toContain('http');
    expect(send.builtins).not.toContain('internal/deps/undici/undici');
  });

  it('--help lists the commands with examples, and every command has examples', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    for (const c of ['init', 'start', 'migrate', 'status']) expect(r.stdout).toContain(c);
    for (const c of ['init', 'start', 'migrate', 'status']) {
      const sub = await runCli([c, '--help']);
      expect(sub.code).toBe(0);
      expect(sub.stdout).toContain('Examples:');
    }
  });

  it('--help and the README name all seven channels', async () => {
    const channels = ['inbox', 'email', 'mobile push', 'web push', 'SMS', 'chat', 'HTTP'];
    // The description above the options, and the README's first paragraph, as one line each.
    const help = (await runCli(['--help'])).stdout.split('Options:')[0]!.replace(/\s+/g, ' ');
    const intro = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
      .split('\n\n')[1]!
      .replace(/\s+/g, ' ');
    for (const channel of channels) {
      expect(help).toContain(channel);
      expect(intro).toContain(channel);
    }
  });

  it('ends as SIGPIPE would (141), without a stack, when its reader closes the pipe early (herald --help | head)', async () => {
    const child = spawn(HERALD_BIN, ['--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the reader is gone before the first line is written
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const [exitCode] = (await once(child, 'close')) as [number | null];
    expect(stderr).toBe('');
    expect(exitCode).toBe(141);
  });

  it('starts a delivery worker alone with a larger young generation than the appliance, the API and the CLI', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-options-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const hook = join(dir, 'print-options.mjs');
    writeFileSync(hook, `process.stderr.write('NODE_OPTIONS=' + process.env.NODE_OPTIONS + '\\n');`);
    const semiSpace = async (args: string[]) => {
      const r = await runCli([...args, '--help'], { env: { NODE_OPTIONS: `--import ${hook}` } });
      expect(r.code).toBe(0);
      // The caller's options come after the executable's, so they win.
      return /^NODE_OPTIONS=--max-semi-space-size=(\d+) --import /m.exec(r.stderr)?.[1];
    };
    expect(await semiSpace(['start', '--role', 'worker'])).toBe('32');
    expect(await semiSpace(['start', '--no-migrate', '--role=worker'])).toBe('32');
    expect(await semiSpace(['start', '--role', 'api'])).toBe('8');
    expect(await semiSpace(['start'])).toBe('8');
    expect(await semiSpace(['send'])).toBe('8');
  });

  it('exits 2 on usage errors', async () => {
    expect((await runCli(['no-such-command'])).code).toBe(2);
    expect((await runCli(['start', '--role', 'everything'])).code).toBe(2);
    expect((await runCli(['init', '--bogus-flag'])).code).toBe(2);
  });

  it('refuses an interactive init without a terminal', async () => {
    const r = await runCli(['init', '--data-dir', tempDataDir()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--yes/);
  });
});

describe('embedded PostgreSQL install', { timeout: 180_000 }, () => {
  it('init -> start serves health, readiness and a valid OpenAPI document; SIGTERM drains and exits 0; a second start reuses the data', async () => {
    const dataDir = tempDataDir();
    const env = { HERALD_EMBEDDED_POSTGRES_PORT: String(await freePort()), DATABASE_URL: '', HERALD_LOG_LEVEL: 'info' };
    const port = await freePort();
    const init = await runCli(
      ['init', '--yes', '--data-dir', dataDir, '--mode', 'multi', '--port', String(port), '--json'],
      { env },
    );
    expect(init.code, init.stderr).toBe(0);
    expect(JSON.parse(init.stdout)).toMatchObject({
      mode: 'multi',
      database: 'embedded',
      migrations_applied: expect.arrayContaining(['0001-baseline']),
    });
    // init stopped its cluster
    expect(postgresProcessesFor(dataDir)).toEqual([]);
    const keyFile = readFileSync(join(dataDir, 'keys.json'), 'utf8');

    const first = await startHerald(['--data-dir', dataDir], env);
    expect(first.url).toBe(`http://127.0.0.1:${port}`);
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${first.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', database: true, queue: true });
    const doc = await (await fetch(`${first.url}/v1/openapi.json`)).json();
    expect((await validate(doc)).valid).toBe(true);
    // status sees the running install (and its embedded database) without starting another one
    const status = await runCli(['status', '--json', '--data-dir', dataDir], { env });
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      database: { kind: 'embedded', reachable: true },
      migrations: { pending: [] },
      queue: { installed: true },
      http: { reachable: true },
    });
    expect(await first.stop('SIGTERM')).toBe(0);
    expect(first.output()).toMatch(/herald stopped/);
    expect(postgresProcessesFor(dataDir)).toEqual([]);

    const second = await startHerald(['--data-dir', dataDir], env);
    expect((await fetch(`${second.url}/readyz`)).status).toBe(200);
    expect(second.output()).not.toMatch(/migrations applied/);
    expect(readFileSync(join(dataDir, 'keys.json'), 'utf8')).toBe(keyFile);
    expect(await second.stop('SIGINT')).toBe(0);
    expect(postgresProcessesFor(dataDir)).toEqual([]);
  });

  it('single mode: init creates the tenant and a verified owner once; re-running init keeps them', async () => {
    const dataDir = tempDataDir();
    const env = { HERALD_EMBEDDED_POSTGRES_PORT: String(await freePort()), DATABASE_URL: '' };
    const args = [
      'init',
      '--yes',
      '--data-dir',
      dataDir,
      '--tenant',
      'Acme',
      '--owner-email',
      'Owner@Acme.test',
      '--owner-password',
      'correct horse battery',
      '--json',
    ];
    const first = await runCli(args, { env });
    expect(first.code, first.stderr).toBe(0);
    const created = JSON.parse(first.stdout);
    expect(created).toMatchObject({
      mode: 'single',
      tenant_name: 'Acme',
      owner_email: 'owner@acme.test',
      created: true,
    });
    expect(created.generated_password).toBeUndefined();
    const again = await runCli(args, { env });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ tenant_id: created.tenant_id, created: false });
  });

  it('single mode without a tenant name is a usage error', async () => {
    const r = await runCli(['init', '--yes', '--data-dir', tempDataDir(), '--owner-email', 'a@b.test'], {
      env: { HERALD_EMBEDDED_POSTGRES_PORT: String(await freePort()), DATABASE_URL: '' },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--tenant/);
  });
});

describe('external PostgreSQL (DATABASE_URL)', { timeout: 180_000 }, () => {
  async function emptyDatabase(): Promise<string> {
    const name = `herald_cli_${Math.random().toString(36).slice(2, 10)}`;
    const adminUrl = inject('adminUrl');
    await admin(adminUrl, `CREATE DATABASE "${name}"`);
    cleanups.push(() => admin(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    return withDatabase(adminUrl, name);
  }

  /** `herald init` of a multi-tenant install on a new empty database: its data directory, port and init's output. */
  async function initExternal(): Promise<{ dataDir: string; port: number; initOutput: string }> {
    const databaseUrl = await emptyDatabase();
    const dataDir = tempDataDir();
    const port = await freePort();
    const init = await runCli(
      [
        'init',
        '--yes',
        '--data-dir',
        dataDir,
        '--mode',
        'multi',
        '--database-url',
        databaseUrl,
        '--port',
        String(port),
        '--json',
      ],
      {
        env: { DATABASE_URL: '' },
      },
    );
    expect(init.code, init.stderr).toBe(0);
    return { dataDir, port, initOutput: init.stdout };
  }

  it('start --no-migrate refuses with pending migrations and names the command; migrate --dry-run prints the SQL; migrate applies it', async () => {
    const databaseUrl = await emptyDatabase();
    const dataDir = tempDataDir();
    const env = {
      DATABASE_URL: databaseUrl,
      HERALD_HOME: dataDir,
      HERALD_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
    };
    const refused = await runCli(['start', '--no-migrate', '--port', String(await freePort())], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/herald migrate/);
    const dry = await runCli(['migrate', '--dry-run'], { env });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/-- migration 0001-baseline/);
    expect(dry.stdout).toMatch(/CREATE TABLE tenants/);
    const stillPending = await runCli(['migrate', '--dry-run', '--json'], { env });
    expect(JSON.parse(stillPending.stdout).pending.length).toBeGreaterThan(0);
    const applied = await runCli(['migrate', '--json'], { env });
    expect(applied.code, applied.stderr).toBe(0);
    expect(JSON.parse(applied.stdout).applied).toContain('0001-baseline');
    const upToDate = await runCli(['migrate'], { env });
    expect(upToDate.stdout).toMatch(/up to date/);
    const started = await startHerald(['--no-migrate', '--port', String(await freePort())], env);
    expect((await fetch(`${started.url}/readyz`)).status).toBe(200);
    expect(await started.stop()).toBe(0);
  });

  it('start keeps serving when the pipes of its output and log close', async () => {
    const { dataDir, port } = await initExternal();
    const child = spawn(HERALD_BIN, ['start', '--data-dir', dataDir], {
      env: { ...process.env, DATABASE_URL: '', HERALD_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(() => void child.kill('SIGKILL'));
    const exited = once(child, 'exit');
    child.stdout.destroy(); // it writes its listening URL here, and its log to stderr, after both are gone
    child.stderr.destroy();
    let ready = false;
    for (let tries = 0; tries < 300 && !ready && child.exitCode === null; tries++) {
      ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(ready).toBe(true);
    // Requests log (info) to the closed pipe: it still answers them.
    for (let i = 0; i < 3; i++) expect((await fetch(`http://127.0.0.1:${port}/v1/notifications`)).status).toBe(401);
    expect(child.exitCode).toBeNull();
    child.kill('SIGTERM');
    expect((await exited)[0]).toBe(0);
  });

  it('init -> start -> SIGTERM on an external database', async () => {
    const { dataDir, port, initOutput } = await initExternal();
    expect(JSON.parse(initOutput).database).toBe('external');
    // The config file keeps the URL (it may hold a password): owner-only.
    expect(readFileSync(join(dataDir, 'herald.json'), 'utf8')).toContain('databaseUrl');
    const started = await startHerald(['--data-dir', dataDir], { DATABASE_URL: '' });
    expect(started.url).toBe(`http://127.0.0.1:${port}`);
    expect((await fetch(`${started.url}/readyz`)).status).toBe(200);
    expect(await started.stop()).toBe(0);
  });
});

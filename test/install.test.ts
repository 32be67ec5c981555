// ./install.sh --start in a copy of this checkout: it initialises ./data (embedded PostgreSQL), prints the
// owner's password, starts Herald and serves. What it prints reads as what happens: no "Next: herald
// start" for the reader to run, since the script starts Herald itself.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './support/eventually.ts';
import { postgresProcessesFor } from './support/herald-process.ts';
import { freePort } from '../server/base/db/embedded-postgres.ts';

const repo = fileURLToPath(new URL('..', import.meta.url));
const cleanups: Array<() => unknown> = [];
afterAll(() => {
  for (const c of cleanups.reverse()) c();
});

/** A copy of this checkout's files (those git would add too), node_modules hard-linked (install.sh finds it installed). */
function copyOfCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'herald-install-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const clone = join(dir, 'herald');
  mkdirSync(clone);
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: repo,
    encoding: 'utf8',
  })
    .split('\0')
    .filter(Boolean);
  execFileSync('cp', ['--parents', '-t', clone, ...files], { cwd: repo });
  execFileSync('cp', ['-al', join(repo, 'node_modules'), join(clone, 'node_modules')]);
  return clone;
}

function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const k of Object.keys(env))
    if (k.startsWith('VITEST') || k === 'DATABASE_URL' || (k.startsWith('HERALD_') && !(k in extra))) delete env[k];
  return env;
}

describe('./install.sh --start', { timeout: 300_000 }, () => {
  it('initialises, says it starts Herald, and serves, without telling the reader to start it', async () => {
    const clone = copyOfCheckout();
    const port = await freePort();
    const child = spawn(join(clone, 'install.sh'), ['--start'], {
      cwd: clone,
      env: cleanEnv({ HERALD_PORT: String(port) }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    cleanups.push(() => child.exitCode === null && child.kill('SIGKILL'));
    await eventually(() => out.includes('Herald listening on') || child.exitCode !== null, {
      timeoutMs: 240_000,
      intervalMs: 200,
    }).catch((error) => {
      throw new Error(`${(error as Error).message}\n${out}`);
    });
    expect(child.exitCode, out).toBeNull();
    const clusterDir = JSON.parse(readFileSync(join(clone, 'data', 'embedded-postgres.json'), 'utf8'))
      .cluster_dir as string;
    cleanups.push(() => rmSync(clusterDir, { recursive: true, force: true }));
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);

    expect(out).toContain('==> dependencies already installed');
    expect(out).toMatch(/Owner password \(shown once, store it now\): \S+/);
    expect(out).not.toContain('Next: herald start');
    expect(out).toContain(`==> starting Herald from ${join(clone, 'data')} (Ctrl-C to stop)`);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    await eventually(() => postgresProcessesFor(clusterDir).length === 0, { timeoutMs: 15_000 });
  });
});

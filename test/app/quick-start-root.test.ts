// The README's quick start as root in a clone under a 0700 directory (a home directory, say), where
// the postgres system user that runs the embedded cluster can reach neither the binaries nor ./data:
// `./install.sh --start` must come up all the same, and so must the test suite's embedded cluster.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, chmodSync, readFileSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../support/eventually.ts';
import { postgresProcessesFor } from '../support/herald-process.ts';
import { freePort } from '../../server/base/db/embedded-postgres.ts';
import { notRoot, titleUnless } from '../support/skip-reasons.ts';

const needsRoot = notRoot();
const repo = fileURLToPath(new URL('../..', import.meta.url));
const cleanups: Array<() => unknown> = [];
afterAll(() => {
  for (const c of cleanups.reverse()) c();
});

/** A copy of this checkout (tracked files, node_modules hard-linked) inside a 0700 directory. */
function privateClone(): string {
  const home = mkdtempSync(join(tmpdir(), 'herald-home-'));
  chmodSync(home, 0o700);
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  const clone = join(home, 'herald');
  mkdirSync(clone);
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: repo, encoding: 'utf8' }).split('\0').filter(Boolean);
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

describe.skipIf(needsRoot)(
  titleUnless(needsRoot, 'the quick start as root from a 0700 directory'),
  { timeout: 300_000 },
  () => {
    it('./install.sh --start comes up and stops cleanly; the embedded test cluster starts too', async () => {
      const clone = privateClone();
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
      await eventually(() => out.includes('Herald listening on'), { timeoutMs: 120_000, intervalMs: 200 }).catch(
        (error) => {
          throw new Error(`${(error as Error).message}\n${out}`);
        },
      );
      expect(out).not.toMatch(/EACCES|\n\s+at /);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(200);
      const clusterDir = JSON.parse(readFileSync(join(clone, 'data', 'embedded-postgres.json'), 'utf8'))
        .cluster_dir as string;
      cleanups.push(() => rmSync(clusterDir, { recursive: true, force: true }));
      expect(postgresProcessesFor(clusterDir).length).toBeGreaterThan(0);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await eventually(() => postgresProcessesFor(clusterDir).length === 0, { timeoutMs: 15_000 });

      // `npm test` starts its own embedded cluster from the same clone (one small file stands for the suite).
      const vitest = spawn(
        join(clone, 'node_modules', '.bin', 'vitest'),
        ['run', 'test/base/db/embedded-postgres.test.ts'],
        { cwd: clone, env: cleanEnv({}), stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let testOut = '';
      vitest.stdout.on('data', (d) => (testOut += d));
      vitest.stderr.on('data', (d) => (testOut += d));
      const code = await new Promise<number | null>((resolve) => vitest.on('exit', (c) => resolve(c)));
      expect(code, testOut).toBe(0);
      expect(testOut).not.toMatch(/EACCES/);
    });
  },
);

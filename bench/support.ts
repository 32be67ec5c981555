// What the benchmarks share: a fresh database (DATABASE_URL's server, else an embedded PostgreSQL in a
// temporary directory), Herald as real processes, a tenant with a service key and raised trigger
// limits, percentiles, and clean-up on the way out whatever happens.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { EntityManager } from '@mikro-orm/postgresql';
import { loadConfig, type Config } from '../server/config.ts';
import { generateKey } from '../server/crypto/keyring.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../server/db/embedded-postgres.ts';
import { execute } from '../server/db/sql.ts';
import { hashServiceKey } from '../server/auth/credentials.ts';
import { newId } from '../server/ids.ts';
import { createTenant } from '../server/services/tenants.ts';
import { createUser } from '../server/services/users.ts';

export const HERALD_BIN = fileURLToPath(new URL('../bin/herald', import.meta.url));

/** Run on the way out, last registered first. */
export const cleanups: Array<() => Promise<unknown>> = [];

export async function runBench(main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (error) {
    console.error(`bench failed: ${(error as Error).message}`);
    process.exitCode = 1;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
}

export function stats(values: number[]): { p50: number; p99: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p99: at(0.99) };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const fmt = (n: number) => (n >= 100 ? Math.round(n).toString() : n.toFixed(1));
export const print = (line: string) => console.log(line);

/** More WAL than the benchmark's runs write in all (about 70 MB after the set-up). */
const WAL_AGE_MB = 128;

/**
 * Gives a new cluster the WAL segments a cluster that has been running has. A new cluster creates
 * each 16 MB segment as its WAL reaches it, writing it full of zeroes (wal_init_zero) while every
 * commit waits: a stall of all the requests in flight, enough to set a run's p99. A cluster that has
 * been running reuses the segments of past checkpoints instead (wal_recycle). So: write that much WAL
 * (messages, no table) and checkpoint, which keeps the segments for reuse.
 */
async function ageWal(admin: pg.Client): Promise<void> {
  await admin.query(`SELECT count(pg_logical_emit_message(false, 'herald-bench', repeat('x', 1048576))) FROM generate_series(1, ${WAL_AGE_MB})`);
  await admin.query('CHECKPOINT');
}


export async function freshDatabase(dataDir: string): Promise<string> {
  const name = `herald_bench_${randomBytes(4).toString('hex')}`;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const embedded: EmbeddedDatabase = await startEmbeddedPostgres({
      dir: join(dataDir, 'pg'),
      port: await freePort(),
      database: 'postgres',
      secretFile: join(dataDir, 'pg-secret.json'),
      create: true,
    });
    cleanups.push(() => embedded.stop());
    adminUrl = embedded.url;
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  if (!process.env.DATABASE_URL) await ageWal(admin);
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  if (process.env.DATABASE_URL) {
    cleanups.push(async () => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    });
  }
  return u.toString();
}

/** `herald start` with these arguments; `env` adds to this process's environment (undefined removes a variable). */
export async function startHerald(args: string[], env: Record<string, string | undefined>, readyText: string | null): Promise<ChildProcess> {
  const child = spawn(HERALD_BIN, ['start', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  child.stderr!.on('data', (d) => process.stderr.write(d));
  if (readyText) {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d) => {
        out += d;
        if (out.includes(readyText)) resolve();
      });
      child.on('exit', (code) => reject(new Error(`herald ${args.join(' ')} exited with ${code}`)));
    });
  } else {
    child.stdout!.resume();
  }
  return child;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** A temporary directory for one benchmark run, removed at the end (the embedded cluster's user can traverse it). */
export function benchDataDir(prefix: string): string {
  const dataDir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  chmodSync(dataDir, 0o711);
  cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  return dataDir;
}

/** A data directory and a fresh database for one benchmark run, removed at the end. */
export async function benchInstall(prefix: string): Promise<{ dataDir: string; url: string; encryptionKeys: string; config: Config }> {
  const dataDir = benchDataDir(prefix);
  const url = await freshDatabase(dataDir);
  const encryptionKeys = `bench:${generateKey()}`;
  return { dataDir, url, encryptionKeys, config: loadConfig({ dataDir, databaseUrl: url, encryptionKeys, logLevel: 'warn' }, {}) };
}

/** A tenant with a service key (returned) and trigger limits raised out of the way. */
export async function benchTenant(em: EntityManager, name = 'Bench'): Promise<{ tenant: { id: string }; apiKey: string }> {
  const user = await createUser(em, { email: `${name.toLowerCase()}-${randomBytes(4).toString('hex')}@example.test`, password: 'bench password 1', verified: true });
  const tenant = await createTenant(em, { name, ownerUserId: user.id, makeDefault: true });
  const apiKey = `sk_${randomBytes(24).toString('base64url')}`;
  await execute(em, `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash) VALUES ($1, $2, 'bench', 'sk_bench', $3)`, [newId(), tenant.id, hashServiceKey(apiKey)]);
  await execute(em, `INSERT INTO tenant_limits (tenant_id, name, value) VALUES ($1, 'rate:trigger', 10000000), ($1, 'rate:trigger:burst', 10000000)`, [tenant.id]);
  return { tenant, apiKey };
}

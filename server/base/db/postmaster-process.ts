// The postmaster of a cluster directory, as the operating system shows it: which process runs it (its
// postmaster.pid must name this directory, and the process must run there), whether a live Herald
// process started it (the owner file) or it was orphaned by a kill -9, and how to stop it by pid.
import { execFileSync } from 'node:child_process';
import { readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

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

export function sameDir(a: string, b: string): boolean {
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

/** Written into the cluster directory by the Herald process that starts the postmaster: its pid. */
export const OWNER_FILE = 'herald.owner';

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
export function discardForeignPidFile(dir: string): void {
  const pidFile = readPidFile(dir);
  if (pidFile && !sameDir(pidFile.dir, dir)) rmSync(join(dir, 'postmaster.pid'), { force: true });
}

/**
 * Stops a postmaster by pid within `budgetMs`: fast shutdown, then immediate, then SIGKILL, each of the
 * last two given a quarter of the budget (at most 5 s); resolves once it is gone or the budget is spent.
 * A budget under a second is spent on the fast shutdown alone, which goes on after that if need be.
 */
export async function stopPostmaster(pid: number, budgetMs = 40_000): Promise<void> {
  const escalationMs = budgetMs < 1000 ? 0 : Math.min(5000, budgetMs / 4);
  const steps: Array<[NodeJS.Signals, number]> = [['SIGINT', budgetMs - 2 * escalationMs]];
  if (escalationMs > 0) steps.push(['SIGQUIT', escalationMs], ['SIGKILL', escalationMs]);
  for (const [signal, wait] of steps) {
    try {
      process.kill(pid, signal);
    } catch {
      return;
    }
    for (const deadline = Date.now() + wait; Date.now() < deadline;) {
      if (!alive(pid)) return;
      await sleep(Math.min(100, Math.max(1, deadline - Date.now())));
    }
  }
}

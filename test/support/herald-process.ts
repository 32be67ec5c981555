// `herald start` as a subprocess (as an operator runs it), and the PostgreSQL processes of a cluster
// directory, for tests of processes, signals and crashes.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HERALD_BIN } from './cli.ts';
import { TEST_DELIVERY_RETRY_SCHEDULE } from './delivery-retries.ts';

export interface HeraldProcess {
  child: ChildProcess;
  /** The listening URL ('' for a worker-only process). */
  url: string;
  output: () => string;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `herald start ...args`; resolves once it listens (or, for `--role worker`, once it logs that it started). */
export async function startHerald(
  args: string[],
  env: Record<string, string | undefined>,
  timeoutMs = 60_000,
): Promise<HeraldProcess> {
  const merged: Record<string, string | undefined> = {
    HERALD_DELIVERY_RETRY_SCHEDULE: TEST_DELIVERY_RETRY_SCHEDULE.join(','),
    ...process.env,
    ...env,
  };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  const child = spawn(HERALD_BIN, ['start', ...args], {
    env: merged as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const workerOnly = args.join(' ').includes('--role worker');
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`herald start did not come up:\n${out}`)), timeoutMs);
    const check = () => {
      const listening = /Herald listening on (http:\/\/\S+)/.exec(out);
      if (listening || (workerOnly && /"msg":"herald started"/.test(out))) {
        clearTimeout(timer);
        resolve(listening?.[1] ?? '');
      }
    };
    child.stdout!.on('data', (d) => ((out += d), check()));
    child.stderr!.on('data', (d) => ((out += d), check()));
    child.on('close', () => reject(new Error(`herald start exited early:\n${out}`)));
  });
  return {
    child,
    url,
    output: () => out,
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Command lines of the running PostgreSQL processes whose command line names `dir`. */
export function postgresProcessesFor(dir: string): string[] {
  try {
    return execFileSync('pgrep', ['-af', 'postgres'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.includes(dir));
  } catch {
    return [];
  }
}

/** The postmaster's pid from a cluster directory's postmaster.pid, or null. */
export function postmasterPid(clusterDir: string): number | null {
  try {
    return Number(readFileSync(join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return null;
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

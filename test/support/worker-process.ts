// A `herald start --role worker` subprocess against a test app's database, for tests that kill one.
import { spawn, type ChildProcess } from 'node:child_process';
import { HERALD_BIN } from './cli.ts';
import { TEST_DELIVERY_RETRY_SCHEDULE } from './delivery-retries.ts';

export function startWorkerProcess(env: Record<string, string | undefined>): ChildProcess {
  const child = spawn(HERALD_BIN, ['start', '--role', 'worker'], {
    env: {
      HERALD_DELIVERY_RETRY_SCHEDULE: TEST_DELIVERY_RETRY_SCHEDULE.join(','),
      ...process.env,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', () => undefined);
  return child;
}

/** Kills (SIGKILL) the children still running. */
export function killAll(children: ChildProcess[]): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

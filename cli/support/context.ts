// Shared plumbing of local admin commands: the config from --data-dir and friends, and a runtime (or
// just the database) opened for the command's duration, then closed, whatever happens.
import type { Command } from 'commander';
import { loadConfig, type Config, type ConfigInput } from '../../server/base/config.ts';
import { startRuntime, stopRuntime, type Runtime, type RuntimeOptions } from '../../server/app/runtime.ts';

/** Adds --data-dir to a command (every local command has it). */
export function withDataDir(command: Command): Command {
  return command.option(
    '--data-dir <dir>',
    'data directory (default: $HERALD_HOME, else ~/.herald or /var/lib/herald as root)',
  );
}

export function configFrom(options: { dataDir?: string } & Partial<ConfigInput>): Config {
  return loadConfig({ ...options });
}

/**
 * Runs `fn` with a runtime for local admin work: migrations must be applied (the command says which
 * command to run otherwise), the queue is started only when asked, and nothing is logged below warn.
 */
export async function withLocalRuntime<T>(
  config: Config,
  fn: (runtime: Runtime) => Promise<T>,
  options: Pick<RuntimeOptions, 'queue'> = {},
): Promise<T> {
  const runtime = await startRuntime(config, {
    migrate: false,
    queue: options.queue ?? false,
    role: 'api',
    poolMax: 4,
  });
  try {
    return await fn(runtime);
  } finally {
    await stopRuntime(runtime);
  }
}

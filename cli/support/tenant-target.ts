// Commands that act for one tenant either on the host (--tenant <id>, straight to the database
// through the services) or remotely (--url and --api-key, or HERALD_URL and HERALD_API_KEY, through
// the HTTP API). The command supplies both implementations of its operations; this picks one.
import type { Command } from 'commander';
import { findTenant } from '../../server/services/tenants.ts';
import type { Runtime } from '../../server/runtime.ts';
import { configFrom, withDataDir, withLocalRuntime } from './context.ts';
import { CliError, usageError } from './output.ts';
import { remoteClient, type RemoteClient, type RemoteOptions } from './remote.ts';

export interface TenantTargetOptions extends RemoteOptions {
  dataDir?: string;
  tenant?: string;
  json?: boolean;
}

export const TARGET_HELP = 'Local mode (on the host): --tenant <id> [--data-dir <dir>]. Remote mode: --url and --api-key, or HERALD_URL and HERALD_API_KEY.';

export function withTenantTarget(command: Command): Command {
  return withDataDir(command)
    .option('--tenant <id>', 'local mode: the tenant id')
    .option('--url <url>', 'remote mode: Herald base URL (default $HERALD_URL)')
    .option('--api-key <key>', 'remote mode: a service key of the tenant (default $HERALD_API_KEY; other users can see a flag in the process list)')
    .option('--api-key-file <file>', "remote mode: read the service key from a file, or '-' for stdin")
    .option('--json', 'print as JSON');
}

/** Builds the command's operations for the chosen mode and runs `fn` with them. */
export async function withTenantApi<A, T>(
  options: TenantTargetOptions,
  build: { remote: (client: RemoteClient) => A; local: (runtime: Runtime, tenantId: string) => A },
  fn: (api: A) => Promise<T>,
): Promise<T> {
  if (options.url ?? process.env.HERALD_URL) return fn(build.remote(remoteClient(options)));
  if (!options.tenant) throw usageError('give --tenant <id> (local mode) or --url and --api-key (remote mode)');
  const tenantId = options.tenant;
  return withLocalRuntime(configFrom({ dataDir: options.dataDir }), async (runtime) => {
    if (!/^[0-9a-f-]{36}$/i.test(tenantId) || !(await findTenant(runtime.orm.em.fork(), tenantId))) throw new CliError(`no tenant ${tenantId}`);
    return fn(build.local(runtime, tenantId));
  });
}

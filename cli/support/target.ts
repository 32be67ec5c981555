// Commands that work both on the host (local mode: --tenant, straight to the database through the
// services) and against a running Herald (remote mode: --url/--api-key or HERALD_URL/HERALD_API_KEY,
// through the HTTP API). Each command group describes its operations once and gives a local and a
// remote implementation of them; the options decide which one runs.
import type { Command } from 'commander';
import { findTenant } from '../../server/services/tenants.ts';
import { isUuid } from '../../server/ids.ts';
import type { Runtime } from '../../server/runtime.ts';
import { configFrom, withDataDir, withLocalRuntime } from './context.ts';
import { CliError, usageError } from './output.ts';
import { remoteClient, type RemoteClient, type RemoteOptions } from './remote.ts';

export interface TargetOptions extends RemoteOptions {
  dataDir?: string;
  tenant?: string;
  json?: boolean;
}

/** Adds the local (--data-dir, --tenant) and remote (--url, --api-key, --api-key-file) options and --json. */
export function withTarget(command: Command): Command {
  return withDataDir(command)
    .option('--tenant <id>', 'local mode: the tenant id')
    .option('--url <url>', 'remote mode: Herald base URL (default $HERALD_URL)')
    .option('--api-key <key>', 'remote mode: a service key of the tenant (default $HERALD_API_KEY; other users can see a flag in the process list)')
    .option('--api-key-file <file>', "remote mode: read the service key from a file, or '-' for stdin")
    .option('--json', 'print as JSON');
}

/** Runs `fn` with the remote implementation when a URL is given, else the local one for --tenant. */
export async function withTargetApi<A, T>(
  options: TargetOptions,
  implementations: { remote: (client: RemoteClient) => A; local: (runtime: Runtime, tenantId: string) => A },
  fn: (api: A) => Promise<T>,
): Promise<T> {
  if (options.url ?? process.env.HERALD_URL) return fn(implementations.remote(remoteClient(options)));
  const tenantId = options.tenant;
  if (!tenantId) throw usageError('give --tenant <id> (local mode) or --url and --api-key (remote mode)');
  if (!isUuid(tenantId)) throw usageError(`--tenant must be a tenant id (a UUID), got "${tenantId}"`);
  return withLocalRuntime(configFrom({ dataDir: options.dataDir }), async (runtime) => {
    if (!(await findTenant(runtime.orm.em.fork(), tenantId))) throw new CliError(`no tenant ${tenantId}`);
    return fn(implementations.local(runtime, tenantId));
  });
}

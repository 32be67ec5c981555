// Commands that work on a tenant both ways: locally (--tenant, the database through the services, on
// the host) and remotely (--url and a service key, through the HTTP API). --url or $HERALD_URL picks
// remote mode. Locally, --tenant may be left out when the install has exactly one tenant (single mode).
import type { Command } from 'commander';
import type { Runtime } from '../../server/app/runtime.ts';
import { configFrom, withDataDir, withLocalRuntime } from './context.ts';
import { remoteClient, type RemoteClient, type RemoteOptions } from './remote.ts';
import { resolveTenant } from './tenant-option.ts';

export interface TargetOptions extends RemoteOptions {
  dataDir?: string;
  tenant?: string;
  json?: boolean;
}

/** Adds the local (--data-dir, --tenant) and remote (--url, --api-key, --api-key-file) options, and --json. */
export function withTarget(command: Command): Command {
  return withDataDir(command)
    .option('--tenant <id>', 'local mode: the tenant id (default: the only tenant of the install)')
    .option('--url <url>', 'remote mode: Herald base URL (default $HERALD_URL)')
    .option('--api-key <key>', 'remote mode: a service key of the tenant (default $HERALD_API_KEY; other users can see a flag in the process list)')
    .option('--api-key-file <file>', "remote mode: read the service key from a file, or '-' for stdin")
    .option('--json', 'print as JSON');
}

export interface Target<T> {
  local(runtime: Runtime, tenantId: string): Promise<T>;
  remote(client: RemoteClient): Promise<T>;
}

/** Runs the remote side with --url/$HERALD_URL, else the local side on the resolved tenant. */
export async function onTarget<T>(options: TargetOptions, target: Target<T>): Promise<T> {
  if (options.url ?? process.env.HERALD_URL) return target.remote(remoteClient(options));
  return withLocalRuntime(configFrom({ dataDir: options.dataDir }), async (runtime) => {
    const tenant = await resolveTenant(runtime.orm.em.fork(), options.tenant);
    return target.local(runtime, tenant.id);
  });
}

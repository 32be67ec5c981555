// Commands that work on a tenant both ways: locally (--tenant, on the host: the API's routes in this
// process, as the host operator) and remotely (--url and a service key, through the HTTP API), one
// request for both. --url or $HERALD_URL picks remote mode. Locally, --tenant may be left out when the
// install has exactly one tenant (single mode).
import type { Command } from 'commander';
import type { Runtime } from '../../server/app/runtime.ts';
import { configFrom, withDataDir, withLocalRuntime } from './context.ts';
import { RemoteClient, remoteClient, type RemoteOptions } from './remote.ts';
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
    .option(
      '--api-key <key>',
      'remote mode: a service key of the tenant (default $HERALD_API_KEY; other users can see a flag in the process list)',
    )
    .option('--api-key-file <file>', "remote mode: read the service key from a file, or '-' for stdin")
    .option('--json', 'print as JSON');
}

/**
 * Runs `call` with a client of Herald at --url/$HERALD_URL, else of the routes in this process acting
 * for the resolved tenant (the in-process API is loaded only then: remote commands never load the server).
 */
export async function onTarget<T>(options: TargetOptions, call: (client: RemoteClient) => Promise<T>): Promise<T> {
  if (options.url ?? process.env.HERALD_URL) return call(remoteClient(options));
  return withLocalRuntime(configFrom({ dataDir: options.dataDir }), async (runtime) => {
    const tenant = await resolveTenant(runtime.orm.em.fork(), options.tenant);
    return withInProcessClient(runtime, tenant.id, call);
  });
}

/** Runs `call` with a client of the routes in this process, as the host operator acting for the tenant. */
export async function withInProcessClient<T>(
  runtime: Runtime,
  tenantId: string,
  call: (client: RemoteClient) => Promise<T>,
): Promise<T> {
  const { openInProcessApi } = await import('../../server/app/in-process-api.ts');
  const api = openInProcessApi(runtime, tenantId);
  try {
    return await call(new RemoteClient({ fetch: api.fetch }));
  } finally {
    api.close();
  }
}

// herald start: runs the appliance (HTTP API, workers, or both) until SIGTERM/SIGINT, then drains:
// stop accepting requests, finish in-flight jobs, stop the embedded PostgreSQL, exit 0.
import { type Command, Option } from 'commander';
import { loadConfig } from '../server/base/config.ts';
import { startRuntime, stopRuntime } from '../server/app/runtime.ts';
import type { Role } from '../server/base/context.ts';
import { startHttpServer, type HttpServer } from '../server/app/http-server.ts';
import { startMetricsServer, type MetricsServer } from '../server/app/metrics-server.ts';
import { recordListening } from '../server/app/listening.ts';
import { usageError } from './support/output.ts';
import { examples } from './support/examples.ts';

interface StartOptions {
  dataDir?: string;
  role: Role;
  port?: string;
  host?: string;
  migrate: boolean;
}

export function registerStart(program: Command): void {
  program
    .command('start')
    .description('run Herald: the HTTP API and the delivery workers')
    .option('--data-dir <dir>', 'data directory (default: $HERALD_HOME, else ~/.herald or /var/lib/herald as root)')
    .addOption(
      new Option('--role <role>', 'what this process runs').choices(['all', 'api', 'worker', 'inbound']).default('all'),
    )
    .option('--port <port>', 'port to listen on (overrides the config)')
    .option('--host <host>', 'address to listen on (overrides the config)')
    .option('--no-migrate', 'refuse to start when migrations are pending, instead of applying them')
    .addHelpText(
      'after',
      examples(
        'herald start --data-dir /var/lib/herald',
        'herald start --role api --port 8080        # scale out: API-only process',
        'herald start --role worker --no-migrate     # delivery workers and webhook dispatch only',
        'herald start --role inbound                 # the bounce SMTP listener only (inboundSmtp, bounceDomain)',
      ),
    )
    .action(async (options: StartOptions) => {
      if (options.port !== undefined && !/^\d+$/.test(options.port)) throw usageError('--port must be a number');
      const config = loadConfig({
        dataDir: options.dataDir,
        port: options.port === undefined ? undefined : Number(options.port),
        host: options.host,
      });
      const runtime = await startRuntime(config, { role: options.role, migrate: options.migrate });
      let http: HttpServer | null = null;
      let metrics: MetricsServer | null = null;
      try {
        if (options.role === 'all' || options.role === 'api') http = await startHttpServer(runtime);
        if (config.metricsListen) metrics = await startMetricsServer(runtime, config.metricsListen);
      } catch (error) {
        await http?.close();
        await stopRuntime(runtime);
        throw error;
      }
      runtime.logger.info('herald started', {
        role: options.role,
        url: http?.url ?? null,
        mode: config.mode,
        pid: process.pid,
      });
      let forgetListening: () => void = () => undefined;
      if (http) {
        try {
          forgetListening = recordListening(config.dataDir, http.url);
        } catch (error) {
          // Without the record `herald status` probes the configured port; serving goes on either way.
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
            runtime.logger.warn('could not record the listening address for herald status', {
              error: (error as Error).message,
            });
        }
        process.stdout.write(`Herald listening on ${http.url}\n`);
      }
      if (metrics) process.stdout.write(`Metrics on ${metrics.url}\n`);
      if (runtime.inboundSmtp)
        process.stdout.write(`Bounce SMTP listening on ${runtime.inboundSmtp.host}:${runtime.inboundSmtp.port}\n`);
      await waitForSignal();
      runtime.logger.info('draining');
      // The drain waits on timers that do not hold the process open (pg-boss's stop timeout among
      // them): without a handle of its own the process could end mid-drain, its exit code 13.
      const draining = setInterval(() => undefined, 1000);
      try {
        forgetListening();
        await http?.close();
        await metrics?.close();
        await stopRuntime(runtime);
      } finally {
        clearInterval(draining);
      }
      runtime.logger.info('herald stopped');
    });
}

function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      process.off('SIGTERM', done);
      process.off('SIGINT', done);
      resolve();
    };
    process.on('SIGTERM', done);
    process.on('SIGINT', done);
  });
}

// herald start: runs the appliance (HTTP API, workers, or both) until SIGTERM/SIGINT, then drains within
// shutdownTimeoutMs: stop accepting requests, finish in-flight jobs, stop the embedded PostgreSQL, exit 0.
// A drain that had to leave something behind (its deadline, a second signal) exits 1.
import { type Command, Option } from 'commander';
import { loadConfig } from '../server/base/config.ts';
import { startRuntime, stopRuntime } from '../server/app/runtime.ts';
import type { Role } from '../server/base/context.ts';
import { startHttpServer, type HttpServer } from '../server/app/http-server.ts';
import { startMetricsServer, type MetricsServer } from '../server/app/metrics-server.ts';
import { recordListening } from '../server/app/listening.ts';
import { EXIT_FAILURE, EXIT_OK, usageError } from './support/output.ts';
import { Drain } from '../server/app/drain.ts';
import { createLogger, type Logger } from '../server/base/logger.ts';
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
      // From the first SIGTERM/SIGINT on, the process ends within shutdownTimeoutMs whatever it is doing
      // (starting, serving, draining, the supervisor restarting the database), and at once on a second one.
      const signals = stopSignals();
      let logger: Logger = createLogger(config.logLevel);
      let drain: Drain | null = null;
      const forceExit = (reason: string) => {
        const unfinished = [...(drain?.unfinished ?? []), drain ? drain.current : 'startup'].filter(Boolean);
        logger.error(`shutdown forced: ${reason}`, { unfinished, timeout_ms: config.shutdownTimeoutMs });
        // The embedded PostgreSQL's exit hook signals the postmaster on the way out (embedded-postgres.ts).
        process.exit(EXIT_FAILURE);
      };
      let stopBy = Infinity;
      void signals.first.then(() => {
        stopBy = Date.now() + config.shutdownTimeoutMs;
        // Not unref'd: the drain waits on timers that do not hold the process open (pg-boss's stop timeout
        // among them), and without a handle of its own the process could end mid-drain, its exit code 13.
        setTimeout(() => forceExit('the drain did not finish in time'), config.shutdownTimeoutMs);
        void signals.second.then(() => forceExit('a second signal'));
      });

      const runtime = await startRuntime(config, { role: options.role, migrate: options.migrate });
      logger = runtime.logger;
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
      await signals.first;
      const running = (drain = new Drain(runtime.logger, Math.max(0, stopBy - Date.now()), { stepsAt: 'info' }));
      runtime.logger.info('draining', { timeout_ms: config.shutdownTimeoutMs });
      forgetListening();
      if (http) {
        const server = http;
        await running.step('http', HTTP_GRACE_MS + 1000, async () => {
          if (await server.close(Math.min(HTTP_GRACE_MS, running.remaining() / 2)))
            running.leftBehind('http: requests still running after the grace, cut');
        });
      }
      if (metrics) {
        const listener = metrics;
        await running.step('metrics listener', 5000, () => listener.close());
      }
      await stopRuntime(runtime, running);
      if (running.unfinished.length > 0) {
        runtime.logger.error('shutdown forced: the drain left work unfinished', {
          unfinished: running.unfinished,
          failed: running.failed,
          timeout_ms: config.shutdownTimeoutMs,
        });
      } else if (running.failed.length > 0) {
        runtime.logger.error('herald stopped; some stop steps failed', { failed: running.failed });
      } else runtime.logger.info('herald stopped');
      // Exits here rather than when the event loop empties: a handle some library keeps (a keep-alive
      // socket, a timer) must not hold a stopped Herald.
      process.exit(running.clean ? EXIT_OK : EXIT_FAILURE);
    });
}

/** How long in-flight requests may take to finish once the server stops accepting (10 s, less in a short drain). */
const HTTP_GRACE_MS = 10_000;

/** The first SIGTERM or SIGINT, and the second: handled for as long as the process runs. */
function stopSignals(): { first: Promise<NodeJS.Signals>; second: Promise<NodeJS.Signals> } {
  let received = 0;
  let first: (signal: NodeJS.Signals) => void = () => undefined;
  let second: (signal: NodeJS.Signals) => void = () => undefined;
  const promises = {
    first: new Promise<NodeJS.Signals>((resolve) => (first = resolve)),
    second: new Promise<NodeJS.Signals>((resolve) => (second = resolve)),
  };
  const onSignal = (signal: NodeJS.Signals) => (++received === 1 ? first(signal) : second(signal));
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return promises;
}

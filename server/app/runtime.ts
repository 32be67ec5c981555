// The running appliance: configuration, logger, clock, database, key ring, token signer and job queue,
// created once at start and passed explicitly to routes, services and jobs. Start order: key ring ->
// database (embedded or external) -> migrations -> token signer -> queue (+ workers) -> HTTP.
import { availableParallelism } from 'node:os';
import type { Config } from '../base/config.ts';
import { systemClock, type Clock } from '../base/clock.ts';
import { createLogger, type LogSink } from '../base/logger.ts';
import { applyMigrations, openDatabase, pendingMigrations } from '../base/db/orm.ts';
import { loadKeyRing, NoKeyFileError, type KeyRing } from '../base/crypto/keyring.ts';
import { missingKeyFileAdviceFor } from './keys.ts';
import { loadTokenSigner } from '../base/auth/tokens.ts';
import {
  heartbeatRefreshSeconds,
  startBoss,
  startLostJobIndexBuild,
  startLostJobReaper,
  stopBoss,
  type PgBoss,
} from '../base/queue.ts';
import { SmtpPool } from '../channels/email/smtp.ts';
import { trustedCas } from '../base/net/trusted-cas.ts';
import type { StreamHub } from '../channels/inbox/hub.ts';
import { ServiceKeyCache } from '../base/auth/service-key-cache.ts';
import { DatabaseAvailability } from '../base/db/availability.ts';
import { query } from '../base/db/sql.ts';
import { Drain } from './drain.ts';
import type { WebhookDispatchOptions } from '../webhooks/dispatcher.ts';
import type { InboundSmtpListener } from '../channels/email/inbound-listener.ts';
import type { Role } from '../base/context.ts';
import type { ApiContext } from '../api/route.ts';

/** The running appliance: the context every module gets, and the process's own parts. */
export interface Runtime extends ApiContext {
  /** Pooled SMTP connections (system emails, tenant transports). */
  readonly smtp: SmtpPool;
  readonly options: RuntimeOptions;
  /** The real-time stream hub (one LISTEN connection); null in worker-only and one-shot CLI runtimes. */
  streamHub: StreamHub | null;
  /** The bounce listener, in processes of role all or inbound when inboundSmtp is configured. */
  inboundSmtp: InboundSmtpListener | null;
  /** Stops a worker process's upkeep of the queue: the lost-job reaper, its index's build, the job tables' statistics. */
  stopQueueChecks?: () => Promise<void>;
}

export interface RuntimeOptions {
  role?: Role;
  /** Apply pending migrations on start (default); when false, refuse to start if any are pending. */
  migrate?: boolean;
  clock?: Clock;
  logSink?: LogSink;
  /** Check every response body against its documented schema (tests). */
  validateResponses?: boolean;
  /** Start the queue (default true); one-shot CLI commands that only touch the database skip it. */
  queue?: boolean;
  poolMax?: number;
  /** The webhook dispatcher's schedule and pacing (tests shorten the retry schedule). */
  webhooks?: WebhookDispatchOptions;
}

/** The database availability probe: a round trip. */
const DATABASE_PROBE = 'SELECT 1';

/**
 * Connections per process when databasePoolSize is not set: two per CPU core for the HTTP side, plus
 * one per concurrent delivery job in a process that runs workers. More connections than the cores
 * can serve only queue inside PostgreSQL, where they compete for the same CPUs and lengthen the tail
 * of request latencies. A PostgreSQL on a bigger machine than Herald's may warrant setting it.
 */
export function defaultPoolSize(role: Role, config: Config): number {
  const http = role === 'worker' || role === 'inbound' ? 2 : Math.max(4, 2 * availableParallelism());
  return http + (role === 'api' || role === 'inbound' ? 0 : config.workerConcurrency);
}

export class StartupError extends Error {
  override name = 'StartupError';
}

export async function startRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const logger = createLogger(config.logLevel, {}, options.logSink);
  const role = options.role ?? 'all';
  const poolMax = options.poolMax ?? config.databasePoolSize ?? defaultPoolSize(role, config);
  // A delivery job's batched send holds a connection for its transaction while each send's lookups
  // take another: with no more connections than jobs at once, every connection could end up held
  // by a job waiting for one, and delivery would stop without an error.
  if ((role === 'all' || role === 'worker') && poolMax <= config.workerConcurrency) {
    throw new StartupError(
      `databasePoolSize (${poolMax}) must be larger than workerConcurrency (${config.workerConcurrency}) in a process that runs workers: raise databasePoolSize (HERALD_DATABASE_POOL_SIZE) or lower workerConcurrency`,
    );
  }
  let keyRing: KeyRing;
  try {
    keyRing = loadKeyRing({ dataDir: config.dataDir, encryptionKeys: config.encryptionKeys });
  } catch (error) {
    if (error instanceof NoKeyFileError) throw new StartupError(await missingKeyFileAdviceFor(config, error));
    throw new StartupError((error as Error).message);
  }
  let availability: DatabaseAvailability | null = null;
  const db = await openDatabase(config, {
    poolMax,
    onLog: (line) => logger.debug('postgres', { line: line.trim() }),
    // Supervision of the embedded cluster: while it restarts, the process reports the outage.
    onStateChange: (state, detail) => {
      if (state === 'restarting') {
        logger.warn(detail);
        availability?.markDown(detail);
      } else logger.info(detail);
    },
    onNotice: (message) => logger.warn(message),
  });
  availability = new DatabaseAvailability(logger, () => query(db.orm.em.fork(), DATABASE_PROBE));
  let runtime: Runtime | null = null;
  try {
    const pending = await pendingMigrations(db.orm);
    if (pending.length > 0) {
      if (options.migrate === false) {
        throw new StartupError(
          `${pending.length} database migration(s) pending (${pending.join(', ')}): run 'herald migrate' first`,
        );
      }
      const applied = await applyMigrations(db.orm);
      if (applied.length > 0) logger.info('migrations applied', { migrations: applied });
    }
    const tokens = await loadTokenSigner(db.orm.em.fork(), keyRing);
    runtime = {
      config,
      logger,
      clock: options.clock ?? systemClock,
      role,
      db,
      orm: db.orm,
      keyRing,
      tokens,
      boss: null,
      smtp: new SmtpPool({ ca: trustedCas(config), maxConnections: config.smtpConnections }),
      options,
      cleanups: [],
      streamHub: null,
      serviceKeys: new ServiceKeyCache(),
      inboundSmtp: null,
      availability,
    };
    if (options.queue !== false) await startQueue(runtime);
    // Processes that serve HTTP hold the stream hub; one-shot CLI runtimes (no queue) do not need it.
    if ((role === 'all' || role === 'api') && options.queue !== false) {
      const { startStreamHub } = await import('../channels/inbox/hub.ts');
      await startStreamHub(runtime);
    }
    if ((role === 'all' || role === 'inbound') && config.inboundSmtp && options.queue !== false) {
      // Loaded only here: the SMTP server and the mail parser are large, and most installs run without a bounce listener.
      const [{ startInboundSmtp }, { recordLateOutcome }] = await Promise.all([
        import('../channels/email/inbound-listener.ts'),
        import('../delivery/late-outcomes.ts'),
      ]);
      const listener = await startInboundSmtp(runtime, recordLateOutcome);
      runtime.inboundSmtp = listener;
      runtime.cleanups.push(function bounceListener() {
        return listener.close();
      });
    }
    return runtime;
  } catch (error) {
    // Undo whatever started (queue, hub, pools) before the database goes away.
    if (runtime) await stopRuntime(runtime).catch(() => undefined);
    else await db.close().catch(() => undefined);
    throw error;
  }
}

async function startQueue(runtime: Runtime): Promise<void> {
  // Loaded only for a runtime with a queue: the job handlers reach most of the server (the delivery
  // runs, every channel and its providers), which one-shot CLI runtimes never run.
  const [{ jobs }, { metricsOf }, { startQueueStatistics }, { startWebhookDispatcher }] = await Promise.all([
    import('../jobs/index.ts'),
    import('../base/metrics/registry.ts'),
    import('../base/queue-statistics.ts'),
    import('../webhooks/dispatcher.ts'),
  ]);
  const worker = runtime.role === 'all' || runtime.role === 'worker';
  const boss = await startBoss(runtime.db.url, runtime.logger, {
    supervise: worker,
    poolMax: runtime.options.poolMax,
    availability: runtime.availability,
  });
  runtime.boss = boss;
  await createQueues(boss, runtime.config);
  // Schedules live in the database (an idempotent upsert); only supervising workers fire them.
  for (const job of jobs) if (job.schedule) await boss.schedule(job.name, job.schedule);
  if (!worker) return;
  const running = { count: 0 };
  jobsInFlight.set(runtime, running);
  for (const job of jobs) {
    const work = typeof job.work === 'function' ? job.work(runtime.config) : job.work;
    // Jobs with a heartbeat refresh it often (base/queue.ts), so that a killed worker's jobs are found soon.
    const heartbeat = job.queue.heartbeatSeconds
      ? { heartbeatRefreshSeconds: heartbeatRefreshSeconds(runtime.config.lostWorkerSeconds) }
      : {};
    const metrics = metricsOf(runtime);
    await boss.work(job.name, { batchSize: 1, ...heartbeat, ...work }, async (batch) => {
      metrics.observeJobs(job.name, batch.length);
      running.count++;
      try {
        return await job.handler(batch as never, runtime);
      } finally {
        running.count--;
      }
    });
  }
  const stopReaper = startLostJobReaper(boss, runtime.logger, runtime.config.lostWorkerSeconds, runtime.availability);
  const stopIndexBuild = startLostJobIndexBuild(runtime.db.url, runtime.logger);
  const stopStatistics = startQueueStatistics(boss, runtime.logger, { availability: runtime.availability });
  runtime.stopQueueChecks = async () => {
    stopReaper();
    stopStatistics();
    await stopIndexBuild();
  };
  const dispatcher = startWebhookDispatcher(runtime, runtime.options.webhooks);
  runtime.cleanups.push(function webhookDispatcher() {
    return dispatcher.stop();
  });
}

/**
 * Creates every job's queue (idempotent): at start, and before a restore copies queued jobs back. The
 * settings the configuration decides are applied to a queue that exists already, so that a changed
 * retry schedule holds for the jobs enqueued from then on.
 */
export async function createQueues(boss: PgBoss, config: Config): Promise<void> {
  const { jobs } = await import('../jobs/index.ts');
  // Dead letter queues first: a queue naming one requires it to exist.
  for (const job of jobs) if (job.queue.deadLetter) await boss.createQueue(job.queue.deadLetter);
  for (const job of jobs) {
    const configured = job.configuredQueue?.(config);
    await boss.createQueue(job.name, { ...job.queue, ...configured });
    if (configured) await boss.updateQueue(job.name, configured);
  }
}

/**
 * Drains and stops: workers finish in-flight jobs, then cleanups run, then the database closes, all within
 * `drain`'s deadline (shutdownTimeoutMs unless given). The embedded PostgreSQL's stop always runs, with the
 * deadline's last part kept for it. Returns the drain, which says what did not finish.
 */
export async function stopRuntime(
  runtime: Runtime,
  drain: Drain = new Drain(runtime.logger, runtime.config.shutdownTimeoutMs),
): Promise<Drain> {
  if (runtime.stopQueueChecks) await drain.step('queue upkeep', STEP_LIMIT_MS, runtime.stopQueueChecks);
  const boss = runtime.boss;
  if (boss) {
    // pg-boss waits for in-flight jobs, then fails those still running (the queue retries them) and closes
    // its pool: the wait leaves it time for that within the drain.
    const waitMs = Math.max(1000, Math.min(QUEUE_DRAIN_MS, drain.remaining() - QUEUE_CLOSE_MS));
    await drain.step('queue', waitMs + QUEUE_CLOSE_MS, () => stopBoss(boss, waitMs));
    runtime.boss = null;
    const running = jobsInFlight.get(runtime)?.count ?? 0;
    if (running > 0) drain.leftBehind(`queue: ${running} job(s) still running, failed so that they are retried`);
  }
  runtime.smtp.close();
  for (const [i, cleanup] of [...runtime.cleanups].reverse().entries())
    await drain.step(cleanup.name || `cleanup ${i + 1}`, STEP_LIMIT_MS, cleanup);
  runtime.availability.close();
  await drain.step('database connections', STEP_LIMIT_MS, () => runtime.db.orm.close(true));
  const embedded = runtime.db.embedded;
  // Whatever came before, the cluster is stopped: a postmaster left running would outlive Herald.
  if (embedded)
    await drain.step(
      'embedded PostgreSQL',
      drain.timeoutMs,
      () => embedded.stop(Math.max(0, drain.remaining(true) - EMBEDDED_STOP_MARGIN_MS)),
      { final: true },
    );
  return drain;
}

/** How long pg-boss may wait for in-flight jobs when stopping, and what its stop needs after that wait. */
const QUEUE_DRAIN_MS = 20_000;
const QUEUE_CLOSE_MS = 3000;
const STEP_LIMIT_MS = 10_000;
/** The embedded PostgreSQL's stop ends this much before the deadline, so that its step is not reported late. */
const EMBEDDED_STOP_MARGIN_MS = 250;

/** Delivery job handlers running, per runtime: jobs a stop left running did not finish in the drain. */
const jobsInFlight = new WeakMap<Runtime, { count: number }>();

// The /metrics scrape: process-local series (counted in memory as things happen) plus gauges read from
// the database now. The database reads are bounded: queue depth walks pg-boss's index of waiting jobs,
// events in progress probe the (tenant, status) index once per tenant and status, and the "recent"
// gauges read the events of the last 60 s by their time-ordered ids (at most 20,000) with their
// deliveries. They run under a 2 s statement timeout, at most once per 5 s per process (concurrent
// scrapes share one read); when the database cannot answer, the scrape still answers with the
// process-local series and counts the miss.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../base/errors.ts';
import type { Context } from '../base/context.ts';
import type { StreamContext } from '../channels/inbox/hub.ts';
import { query } from '../base/db/sql.ts';
import { poolOf } from '../base/db/orm.ts';
import { BOSS_SCHEMA } from '../base/queue.ts';
import { FINAL_EVENT_STATUSES } from '../base/statuses.ts';
import { EventStatus } from '../schemas/notifications.ts';
import { metricsOf, type HeraldMetrics } from '../base/metrics/registry.ts';

const DATABASE_READ_INTERVAL_MS = 5_000;
const STATEMENT_TIMEOUT_MS = 2_000;
const RECENT_WINDOW_MS = 60_000;
const RECENT_EVENTS_MAX = 20_000;
const QUANTILES = [0.5, 0.9, 0.99] as const;
/** Delivery statuses that end a delivery's life (its latency is measured to them). */
const FINAL_DELIVERY_STATUSES = new Set(['sent', 'delivered', 'failed', 'skipped']);

interface DatabaseReads {
  at: number;
  pending: Promise<void> | null;
}
const lastReads = new WeakMap<Context, DatabaseReads>();

const SET_STATEMENT_TIMEOUT = `SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}`;

const COUNT_WAITING_JOBS = `SELECT q.name, s.ready, s.deferred, s.oldest_seconds
       FROM ${BOSS_SCHEMA}.queue q
       CROSS JOIN LATERAL (
         SELECT count(*) FILTER (WHERE j.start_after <= now())::int AS ready,
                count(*) FILTER (WHERE j.start_after > now())::int AS deferred,
                extract(epoch FROM now() - min(j.created_on) FILTER (WHERE j.start_after <= now()))::float8
                  AS oldest_seconds
           FROM ${BOSS_SCHEMA}.job j
          WHERE j.name = q.name AND j.state < 'active' AND NOT j.blocked) s
      ORDER BY q.name`;

const COUNT_EVENTS_IN_PROGRESS = `SELECT s.status, (SELECT coalesce(sum(c.n), 0) FROM tenants t
                         CROSS JOIN LATERAL (SELECT count(*) AS n FROM events e
                                              WHERE e.tenant_id = t.id AND e.status = s.status) c)::int AS n
       FROM unnest($1::text[]) AS s(status)`;

const COUNT_RECENT = `WITH recent AS
       (SELECT id, status, created_at FROM events WHERE id >= $1::uuid ORDER BY id DESC LIMIT ${RECENT_EVENTS_MAX})
     SELECT 'event' AS kind, status, NULL AS channel, count(*)::int AS n, NULL::float8[] AS quantiles
       FROM recent GROUP BY status
     UNION ALL
     SELECT 'delivery', d.status, d.channel, count(*)::int,
            percentile_cont($2::float8[]) WITHIN GROUP (ORDER BY extract(epoch FROM d.updated_at - r.created_at))
       FROM recent r JOIN deliveries d ON d.event_id = r.id
      GROUP BY d.channel, d.status`;

/**
 * Whether an Authorization header carries the configured metrics token. Both sides are hashed first,
 * so the comparison takes the same time whatever the header's length or content.
 */
export function metricsTokenMatches(configured: string, authorization: string | null): boolean {
  const match = /^Bearer (.+)$/i.exec(authorization?.trim() ?? '');
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(match?.[1] ?? ''), digest(configured)) && match !== null;
}

/** /metrics on the API port: 404 without a configured token, 401 without the right one. */
export function checkMetricsAccess(runtime: Context, authorization: string | null): void {
  const token = runtime.config.metricsToken;
  if (!token)
    throw new AppError('route_not_found', 'No route for GET /metrics (set metricsToken to serve metrics here)');
  if (!metricsTokenMatches(token, authorization)) {
    throw new AppError('unauthorized', 'A valid metrics token is required', {
      headers: { 'WWW-Authenticate': 'Bearer' },
    });
  }
}

/** The Prometheus exposition of this process, with the database-derived gauges refreshed. */
export async function scrapeMetrics(runtime: StreamContext): Promise<{ body: string; contentType: string }> {
  const metrics = metricsOf(runtime);
  metrics.streamConnections.set(runtime.streamHub?.size ?? 0);
  metrics.observePool('app', poolOf(runtime.orm));
  metrics.observePool(
    'queue',
    (runtime.boss?.getDb() as { pool?: Parameters<HeraldMetrics['observePool']>[1] } | undefined)?.pool,
  );
  await refreshDatabaseGauges(runtime, metrics);
  return { body: await metrics.registry.metrics(), contentType: metrics.registry.contentType };
}

async function refreshDatabaseGauges(runtime: Context, metrics: HeraldMetrics): Promise<void> {
  let reads = lastReads.get(runtime);
  if (!reads) lastReads.set(runtime, (reads = { at: 0, pending: null }));
  if (reads.pending) return reads.pending;
  if (Date.now() - reads.at < DATABASE_READ_INTERVAL_MS) return;
  const state = reads;
  state.pending = readDatabaseGauges(runtime, metrics)
    .catch((error: unknown) => {
      for (const gauge of databaseGauges(metrics)) gauge.reset();
      metrics.databaseReadErrors.inc();
      runtime.logger.debug('metrics: database gauges unavailable', {
        error: error instanceof Error ? error.message : String(error),
      });
    })
    .finally(() => {
      state.at = Date.now();
      state.pending = null;
    });
  return state.pending;
}

function databaseGauges(metrics: HeraldMetrics) {
  return [
    metrics.queueDepth,
    metrics.queueOldestAge,
    metrics.eventsInProgress,
    metrics.recentEvents,
    metrics.recentDeliveries,
    metrics.recentDeliveryLatency,
  ];
}

async function readDatabaseGauges(runtime: Context, metrics: HeraldMetrics): Promise<void> {
  const em = runtime.orm.em.fork();
  const [queues, inProgress, recent] = await em.transactional(async (tx) => {
    await query(tx, SET_STATEMENT_TIMEOUT);
    return [await readQueues(tx), await readEventsInProgress(tx), await readRecent(tx)] as const;
  });
  for (const gauge of databaseGauges(metrics)) gauge.reset();
  for (const q of queues) {
    metrics.queueDepth.set({ queue: q.name, state: 'ready' }, q.ready);
    metrics.queueDepth.set({ queue: q.name, state: 'deferred' }, q.deferred);
    metrics.queueOldestAge.set({ queue: q.name }, q.oldest_seconds ?? 0);
  }
  for (const row of inProgress) metrics.eventsInProgress.set({ status: row.status }, row.n);
  for (const row of recent) {
    if (row.kind === 'event') {
      metrics.recentEvents.set({ status: row.status }, row.n);
      continue;
    }
    const labels = { channel: row.channel!, status: row.status };
    metrics.recentDeliveries.set(labels, row.n);
    if (!FINAL_DELIVERY_STATUSES.has(row.status) || !row.quantiles) continue;
    QUANTILES.forEach((q, i) =>
      metrics.recentDeliveryLatency.set({ ...labels, quantile: String(q) }, row.quantiles![i] ?? 0),
    );
  }
}

interface QueueRow {
  name: string;
  ready: number;
  deferred: number;
  oldest_seconds: number | null;
}

/** Waiting jobs per queue, through pg-boss's partial index of jobs not yet started. */
function readQueues(tx: EntityManager): Promise<QueueRow[]> {
  return query<QueueRow>(tx, COUNT_WAITING_JOBS);
}

/** Events not final yet, counted per tenant through the (tenant_id, status) index: cost follows the backlog, not the table. */
function readEventsInProgress(tx: EntityManager): Promise<Array<{ status: string; n: number }>> {
  const statuses = EventStatus.options.filter((s) => !FINAL_EVENT_STATUSES.has(s));
  return query(tx, COUNT_EVENTS_IN_PROGRESS, [statuses]);
}

interface RecentRow {
  kind: 'event' | 'delivery';
  status: string;
  channel: string | null;
  n: number;
  quantiles: number[] | null;
}

/** The events of the last minute (ids are time-ordered: a range of the primary key) and their deliveries. */
function readRecent(tx: EntityManager): Promise<RecentRow[]> {
  return query<RecentRow>(tx, COUNT_RECENT, [idFloor(Date.now() - RECENT_WINDOW_MS), [...QUANTILES]]);
}

/** The smallest time-ordered (UUIDv7) id of a millisecond: every id made at or after it sorts after it. */
function idFloor(ms: number): string {
  const hex = ms.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

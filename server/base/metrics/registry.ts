// Prometheus metrics of one runtime (prom-client, a registry per runtime so that several runtimes in
// one process, as tests run them, keep their own series). What happens on hot paths (requests,
// triggers, deliveries) is counted in memory: requests as plain numbers read at scrape time
// (request-stats.ts), the rarer events through a cached prom-client child per label set. Gauges that
// need the database are set at scrape time by services/metrics.ts; nothing here runs SQL.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type pg from 'pg';
import type { Context } from '../context.ts';
import { RequestStats } from './request-stats.ts';

/** Seconds; request latency of an API whose hot routes answer in a few milliseconds. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds from trigger to a delivery's final status: inbox in milliseconds, email and push in seconds, retries in minutes. */
const DELIVERY_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];

export class HeraldMetrics {
  readonly registry = new Registry();
  readonly requests: RequestStats;
  readonly triggers: Counter;
  readonly triggerEvents: Counter;
  readonly deliveries: Counter<'channel' | 'status'>;
  readonly deliveryLatency: Histogram<'channel' | 'status'>;
  readonly providerAnswers: Counter<'channel' | 'provider' | 'outcome'>;
  readonly jobsHandled: Counter<'queue'>;
  readonly webhookPolls: Counter;
  readonly streamConnections: Gauge;
  readonly poolConnections: Gauge<'pool' | 'state'>;
  // Install-wide, read from the database at scrape time (the same in every process).
  readonly queueDepth: Gauge<'queue' | 'state'>;
  readonly queueOldestAge: Gauge<'queue'>;
  readonly eventsInProgress: Gauge<'status'>;
  readonly recentEvents: Gauge<'status'>;
  readonly recentDeliveries: Gauge<'channel' | 'status'>;
  readonly recentDeliveryLatency: Gauge<'channel' | 'status' | 'quantile'>;
  readonly databaseReadErrors: Counter;
  readonly #jobChildren = new Map<string, { inc(n?: number): void }>();
  readonly #providerChildren = new Map<string, { inc(n?: number): void }>();
  readonly #deliveryChildren = new Map<
    string,
    { count: { inc(n?: number): void }; latency: { observe(v: number): void } }
  >();

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const counter = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
      new Counter<L>({ name, help, labelNames, registers });
    const gauge = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
      new Gauge<L>({ name, help, labelNames, registers });
    const histogram = <L extends string>(name: string, help: string, labelNames: L[], buckets: number[]) =>
      new Histogram<L>({ name, help, labelNames, buckets, registers });
    this.requests = new RequestStats(
      this.registry,
      { counter: 'herald_http_requests_total', histogram: 'herald_http_request_duration_seconds' },
      {
        counter: 'HTTP requests answered, by method, route pattern and status',
        histogram:
          'Time to answer an HTTP request (to the response head; streams count until they open), by method, route pattern and status',
      },
      HTTP_BUCKETS,
    );
    this.triggers = counter(
      'herald_triggers_total',
      'Triggers answered 202 (POST /v1/notifications; Idempotency-Key replays included)',
    );
    this.triggerEvents = counter('herald_trigger_events_total', 'Events (one per recipient) in accepted triggers');
    this.deliveries = counter(
      'herald_deliveries_total',
      'Deliveries that reached a final status in this process, by channel and status',
      ['channel', 'status'],
    );
    this.deliveryLatency = histogram(
      'herald_delivery_latency_seconds',
      "Seconds from the trigger to a delivery's final status, in this process, by channel and status",
      ['channel', 'status'],
      DELIVERY_BUCKETS,
    );
    this.providerAnswers = counter(
      'herald_provider_answers_total',
      'Providers asked by deliveries in this process (each one of a failover counts), by channel, provider and outcome (sent, failed, skipped: circuit open or paused)',
      ['channel', 'provider', 'outcome'],
    );
    this.jobsHandled = counter(
      'herald_jobs_handled_total',
      'Queue jobs this process fetched and ran (retries included), by queue',
      ['queue'],
    );
    this.webhookPolls = counter(
      'herald_webhook_polls_total',
      "Polls of the webhook outbox by this process's dispatcher (claims of due rows, found or not)",
    );
    this.streamConnections = gauge('herald_stream_connections', 'Real-time streams open on this process');
    this.poolConnections = gauge(
      'herald_db_pool_connections',
      'PostgreSQL connections of this process by pool (app, queue) and state (total, idle, waiting: requests queued for a connection)',
      ['pool', 'state'],
    );
    this.queueDepth = gauge(
      'herald_queue_depth',
      'Jobs waiting in each queue: ready (due now) or deferred (a retry backoff or a later start)',
      ['queue', 'state'],
    );
    this.queueOldestAge = gauge(
      'herald_queue_oldest_job_age_seconds',
      'Age of the oldest job due and not yet started in each queue (0 when none waits)',
      ['queue'],
    );
    this.eventsInProgress = gauge('herald_events_in_progress', 'Events not final yet, by status (install-wide)', [
      'status',
    ]);
    this.recentEvents = gauge(
      'herald_recent_events',
      'Events created in the last 60 s by their current status (install-wide; the newest 20,000 at most)',
      ['status'],
    );
    this.recentDeliveries = gauge(
      'herald_recent_deliveries',
      'Deliveries of the events created in the last 60 s, by channel and current status (install-wide)',
      ['channel', 'status'],
    );
    this.recentDeliveryLatency = gauge(
      'herald_recent_delivery_latency_seconds',
      'Seconds from the trigger to a final delivery status, quantiles over the deliveries of the events created in the last 60 s',
      ['channel', 'status', 'quantile'],
    );
    this.databaseReadErrors = counter(
      'herald_metrics_database_errors_total',
      'Scrapes whose database-derived gauges could not be read (they are left out of that scrape)',
    );
  }

  /** Counts one answered request; `route` is the route pattern (never the path: paths can carry tokens). */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.requests.observe(method, route, status, seconds);
  }

  observeTrigger(events: number): void {
    this.triggers.inc();
    this.triggerEvents.inc(events);
  }

  observeJobs(queue: string, count: number): void {
    let child = this.#jobChildren.get(queue);
    if (!child) this.#jobChildren.set(queue, (child = this.jobsHandled.labels({ queue })));
    child.inc(count);
  }

  observeDelivery(channel: string, status: string, secondsSinceTrigger: number | null, count = 1): void {
    const key = `${channel} ${status}`;
    let child = this.#deliveryChildren.get(key);
    if (!child) {
      const labels = { channel, status };
      child = { count: this.deliveries.labels(labels), latency: this.deliveryLatency.labels(labels) };
      this.#deliveryChildren.set(key, child);
    }
    child.count.inc(count);
    if (secondsSinceTrigger !== null) for (let i = 0; i < count; i++) child.latency.observe(secondsSinceTrigger);
  }

  observeProviderAnswer(channel: string, provider: string, outcome: string): void {
    const key = `${channel} ${provider} ${outcome}`;
    let child = this.#providerChildren.get(key);
    if (!child) this.#providerChildren.set(key, (child = this.providerAnswers.labels({ channel, provider, outcome })));
    child.inc();
  }

  /** Sets the pool gauges from a pg.Pool's own counters. */
  observePool(
    pool: string,
    stats: Pick<pg.Pool, 'totalCount' | 'idleCount' | 'waitingCount'> | null | undefined,
  ): void {
    if (!stats) return;
    this.poolConnections.set({ pool, state: 'total' }, stats.totalCount);
    this.poolConnections.set({ pool, state: 'idle' }, stats.idleCount);
    this.poolConnections.set({ pool, state: 'waiting' }, stats.waitingCount);
  }
}

const byRuntime = new WeakMap<Context, HeraldMetrics>();

/** The metrics of a runtime, created on first use. */
export function metricsOf(runtime: Context): HeraldMetrics {
  let metrics = byRuntime.get(runtime);
  if (!metrics) {
    metrics = new HeraldMetrics();
    byRuntime.set(runtime, metrics);
  }
  return metrics;
}

/**
 * The hook of the delivery path: call it when deliveries reach a final status (sent, delivered,
 * failed, skipped), with the seconds since their event was triggered when known. In-memory only.
 */
/** Each provider a delivery's attempt asked, with its answer. */
export function recordProviderAnswers(
  runtime: Context,
  channel: string,
  answers: ReadonlyArray<{ provider: string; outcome: string }>,
): void {
  const metrics = metricsOf(runtime);
  for (const answer of answers) metrics.observeProviderAnswer(channel, answer.provider, answer.outcome);
}

export function recordDeliveries(
  runtime: Context,
  channel: string,
  status: string,
  secondsSinceTrigger: number | null,
  count = 1,
): void {
  metricsOf(runtime).observeDelivery(channel, status, secondsSinceTrigger, count);
}

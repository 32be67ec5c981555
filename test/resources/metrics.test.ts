// Prometheus metrics: GET /metrics on the API port behind the metrics token (404 without one
// configured, 401 without the right one), the separate unauthenticated listener, and the series
// moving after a trigger that is delivered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/eventually.ts';
import { metricsOf } from '../../server/base/metrics/registry.ts';
import {
  createTenantFixture,
  insertInboxTemplate,
  insertNotificationType,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';
import { metricsTokenMatches } from '../../server/resources/metrics.ts';
import { startMetricsServer } from '../../server/app/metrics-server.ts';

const TOKEN = randomBytes(24).toString('hex');

let app: TestApp;
let plain: TestApp;
let acme: TenantFixture;

beforeAll(async () => {
  app = await startTestApp({ config: { metricsToken: TOKEN } });
  plain = await startTestApp({ database: app.database, config: { encryptionKeys: app.config.encryptionKeys } });
  acme = await createTenantFixture(app, 'Acme');
  await insertNotificationType(app, acme.tenantId, { key: 'ping' });
  await insertInboxTemplate(app, acme.tenantId, { type: 'ping', title: 'Ping', content: 'pong' });
});
afterAll(async () => {
  await plain?.close();
  await app?.close();
});

/** The value of one series in an exposition (labels as written by prom-client, in their declared order). */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const scrape = () => app.request('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });

describe('GET /metrics on the API port', () => {
  it('answers 404 when no metrics token is configured, whatever the credential', async () => {
    expect((await plain.request('GET', '/metrics')).status).toBe(404);
    const withKey = await plain.request('GET', '/metrics', { token: acme.serviceKey });
    expect(withKey.status).toBe(404);
    expect(withKey.body.code).toBe('route_not_found');
  });

  it('answers 401 with WWW-Authenticate without the token, with a wrong one, or with a service key', async () => {
    for (const authorization of [
      undefined,
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.slice(1)}`,
      `Bearer ${acme.serviceKey}`,
      TOKEN,
      'Basic abc',
    ]) {
      const res = await app.request('GET', '/metrics', { headers: authorization ? { authorization } : {} });
      expect(res.status, String(authorization)).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.text).not.toContain('herald_http_requests_total');
    }
    expect((await app.request('GET', '/metrics', { token: acme.contactToken })).status).toBe(401);
  });

  it('answers the Prometheus text with the token', async () => {
    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const name of [
      'herald_http_requests_total',
      'herald_http_request_duration_seconds',
      'herald_triggers_total',
      'herald_stream_connections',
      'herald_db_pool_connections',
      'herald_queue_depth',
      'herald_queue_oldest_job_age_seconds',
      'herald_events_in_progress',
      'process_cpu_seconds_total',
    ]) {
      expect(res.text).toContain(`# TYPE ${name} `);
    }
    expect(value(res.text, 'herald_queue_depth{queue="deliver-event",state="ready"}')).toBeGreaterThanOrEqual(0);
    expect(value(res.text, 'herald_events_in_progress{status="queued"}')).toBeGreaterThanOrEqual(0);
    expect(value(res.text, 'herald_db_pool_connections{pool="app",state="total"}')).toBeGreaterThan(0);
  });

  it('moves after a trigger: requests, triggers, events and deliveries (with latency) and the stream gauge', async () => {
    const before = (await scrape()).text;
    const triggersBefore = value(before, 'herald_triggers_total') ?? 0;
    const eventsBefore = value(before, 'herald_trigger_events_total') ?? 0;
    const routeSeries = 'herald_http_requests_total{method="POST",route="/v1/notifications",status="202"}';
    const requestsBefore = value(before, routeSeries) ?? 0;
    // Both processes of the install run workers: either may deliver.
    const delivered = async () => {
      let total = 0;
      for (const runtime of [app.runtime, plain.runtime])
        total +=
          value(
            await metricsOf(runtime).registry.metrics(),
            'herald_deliveries_total{channel="inbox",status="delivered"}',
          ) ?? 0;
      return total;
    };
    const deliveredBefore = await delivered();

    const contactId = await acme.contact('metrics-1');
    const controller = new AbortController();
    const stream = await fetch(`${app.url}/v1/contacts/${contactId}/stream`, {
      headers: { authorization: `Bearer ${acme.tokenFor(contactId)}` },
      signal: controller.signal,
    });
    expect(stream.status).toBe(200);

    const res = await app.request('POST', '/v1/notifications', {
      token: acme.serviceKey,
      body: { type: 'ping', recipients: ['metrics-1', 'metrics-2'] },
    });
    expect(res.status).toBe(202);
    await waitForFinal(
      app,
      res.body.events.map((e: { event_id: string }) => e.event_id),
    );

    // The database-derived gauges are read at most every 5 s: poll until they show the delivery.
    const text = await eventually(
      async () => {
        const scraped = (await scrape()).text;
        return (value(scraped, 'herald_recent_deliveries{channel="inbox",status="delivered"}') ?? 0) >= 2 && scraped;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    ).catch(async () => (await scrape()).text);
    expect(value(text, 'herald_triggers_total')).toBe(triggersBefore + 1);
    expect(value(text, 'herald_trigger_events_total')).toBe(eventsBefore + 2);
    expect(value(text, routeSeries)).toBe(requestsBefore + 1);
    expect(
      value(text, 'herald_http_request_duration_seconds_count{method="POST",route="/v1/notifications",status="202"}'),
    ).toBe(requestsBefore + 1);
    expect(
      value(
        text,
        'herald_http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/v1/notifications",status="202"}',
      ),
    ).toBe(requestsBefore + 1);
    expect(value(text, 'herald_recent_events{status="delivered"}')).toBeGreaterThanOrEqual(2);
    expect(value(text, 'herald_recent_deliveries{channel="inbox",status="delivered"}')).toBeGreaterThanOrEqual(2);
    const p50 = value(
      text,
      'herald_recent_delivery_latency_seconds{channel="inbox",status="delivered",quantile="0.5"}',
    );
    expect(p50).toBeGreaterThanOrEqual(0);
    expect(p50).toBeLessThan(60);
    expect(value(text, 'herald_stream_connections')).toBe(1);
    // Counted by the delivery run itself, in the process whose worker delivered them.
    expect(await delivered()).toBe(deliveredBefore + 2);
    // Paths never appear, only route patterns.
    expect(text).not.toContain(contactId);
    controller.abort();
  });

  it('counts deliveries reported through the exported hook', async () => {
    const { recordDeliveries } = await import('../../server/base/metrics/registry.ts');
    recordDeliveries(app.runtime, 'email', 'sent', 1.5, 2);
    const text = (await scrape()).text;
    expect(value(text, 'herald_deliveries_total{channel="email",status="sent"}')).toBe(2);
    expect(value(text, 'herald_delivery_latency_seconds_count{channel="email",status="sent"}')).toBe(2);
  });
});

describe('request statistics', () => {
  it('fill cumulative buckets, a value on a bound counting in that bound', async () => {
    const { HeraldMetrics } = await import('../../server/base/metrics/registry.ts');
    const metrics = new HeraldMetrics();
    for (const seconds of [0.0005, 0.001, 0.003, 20]) metrics.observeRequest('GET', '/v1/brandings', 200, seconds);
    const text = await metrics.registry.metrics();
    const bucket = (le: string) =>
      value(
        text,
        `herald_http_request_duration_seconds_bucket{le="${le}",method="GET",route="/v1/brandings",status="200"}`,
      );
    expect(bucket('0.001')).toBe(2);
    expect(bucket('0.0025')).toBe(2);
    expect(bucket('0.005')).toBe(3);
    expect(bucket('10')).toBe(3);
    expect(bucket('+Inf')).toBe(4);
    expect(
      value(text, 'herald_http_request_duration_seconds_sum{method="GET",route="/v1/brandings",status="200"}'),
    ).toBeCloseTo(20.0045);
    expect(value(text, 'herald_http_requests_total{method="GET",route="/v1/brandings",status="200"}')).toBe(4);
  });
});

describe('the metrics token comparison', () => {
  it('accepts only the exact bearer token, whatever the lengths', () => {
    expect(metricsTokenMatches(TOKEN, `Bearer ${TOKEN}`)).toBe(true);
    expect(metricsTokenMatches(TOKEN, `bearer ${TOKEN}`)).toBe(true);
    expect(metricsTokenMatches(TOKEN, `Bearer ${TOKEN} `)).toBe(true);
    expect(metricsTokenMatches(TOKEN, null)).toBe(false);
    expect(metricsTokenMatches(TOKEN, 'Bearer ')).toBe(false);
    expect(metricsTokenMatches(TOKEN, `Bearer ${TOKEN}${TOKEN}`)).toBe(false);
    expect(metricsTokenMatches(TOKEN, `Bearer ${TOKEN.toUpperCase()}`)).toBe(false);
  });
});

describe('the metrics listener (metricsListen)', () => {
  it('serves /metrics without credentials and nothing else', async () => {
    const server = await startMetricsServer(plain.runtime, '127.0.0.1:0');
    try {
      const res = await fetch(server.url);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('# TYPE herald_queue_depth gauge');
      expect((await fetch(server.url.replace('/metrics', '/v1/openapi.json'))).status).toBe(404);
      expect((await fetch(server.url, { method: 'POST' })).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

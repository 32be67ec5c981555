// Webhook lines of `npm run bench` (run by bench/run.ts after its own lines, against the same install):
//   6. webhook dispatch at saturation: a backlog of outbox rows (webhook.test events of one endpoint)
//      sent by one fresh worker process to a receiver in this process (deliveries/s, target >= 2,000)
//   7. trigger -> delivery.sent webhook received, at light load (sequential triggers; target p50 <= 50 ms)
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { ChildProcess } from 'node:child_process';
import type pg from 'pg';

export interface WebhookBenchContext {
  db: pg.Client;
  base: string;
  apiKey: string;
  tenantId: string;
  samples: number;
  startWorker: () => Promise<ChildProcess>;
  trigger: () => Promise<string>;
  print: (line: string) => void;
  fmt: (n: number) => string;
  stats: (values: number[]) => { p50: number; p99: number };
}

export const WEBHOOK_BACKLOG = Number(process.env.BENCH_WEBHOOK_BACKLOG ?? 20_000);

export async function benchWebhooks(ctx: WebhookBenchContext): Promise<void> {
  const arrivals: number[] = [];
  const byEvent = new Map<string, number>();
  const waiters = new Map<string, (t: number) => void>();
  const receiver = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', () => {
      const at = performance.now();
      arrivals.push(at);
      res.writeHead(204).end();
      if (req.url === '/latency') {
        const eventId = (JSON.parse(body) as { data: { event_id: string } }).data.event_id;
        const waiter = waiters.get(eventId);
        if (waiter) {
          waiters.delete(eventId);
          waiter(at);
        } else byEvent.set(eventId, at);
      }
    });
  });
  receiver.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  const create = async (path: string, eventTypes: string[]) => {
    const res = await fetch(`${ctx.base}/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${url}${path}`, event_types: eventTypes }),
    });
    if (res.status !== 201) throw new Error(`webhook creation answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  };
  let worker: ChildProcess | null = null;
  try {
    // 6. A backlog written as one statement (as a trigger's outbox rows would be), then drained.
    const saturation = await create('/saturation', ['webhook.test']);
    await ctx.db.query(
      `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_type, payload)
       SELECT $1, $2, 'webhook.test', jsonb_build_object('type', 'webhook.test', 'timestamp', now()::text, 'data', jsonb_build_object('n', n))
         FROM generate_series(1, $3) AS n`,
      [ctx.tenantId, saturation, WEBHOOK_BACKLOG],
    );
    await ctx.db.query(`ANALYZE webhook_deliveries`);
    const t0 = performance.now();
    worker = await ctx.startWorker();
    for (const deadline = Date.now() + 300_000; ;) {
      const left = Number(
        (await ctx.db.query(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`)).rows[0].n,
      );
      if (left === 0) break;
      if (Date.now() > deadline) throw new Error(`${left} webhook deliveries still pending`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const failed = Number(
      (await ctx.db.query(`SELECT count(*) AS n FROM webhook_deliveries WHERE status <> 'succeeded'`)).rows[0].n,
    );
    const first = arrivals[0]!;
    const last = arrivals[arrivals.length - 1]!;
    const warm = arrivals[Math.min(1000, arrivals.length - 1)]!;
    const steady = (arrivals.length - 1000) / ((last - warm) / 1000);
    ctx.print(
      `6. webhook dispatch at saturation: ${ctx.fmt(steady)} deliveries/s after the first 1000 (whole drain ${ctx.fmt(arrivals.length / ((last - first) / 1000))}; ${ctx.fmt((last - t0) / 1000)} s from the worker's start)   (${arrivals.length} requests for ${WEBHOOK_BACKLOG} outbox rows, ${failed} not succeeded; target >= 2000/s)`,
    );
    await ctx.db.query(`UPDATE webhook_endpoints SET enabled = false WHERE id = $1`, [saturation]);

    // 7. Light load: trigger -> the delivery.sent webhook of its inbox delivery.
    await create('/latency', ['delivery.sent']);
    const samples: number[] = [];
    for (let i = 0; i < ctx.samples; i++) {
      const started = performance.now();
      const eventId = await ctx.trigger();
      const at = byEvent.has(eventId)
        ? byEvent.get(eventId)!
        : await new Promise<number>((resolve, reject) => {
            waiters.set(eventId, resolve);
            setTimeout(() => reject(new Error(`no webhook for ${eventId} within 10 s`)), 10_000).unref();
          });
      samples.push(at - started);
      await new Promise((r) => setTimeout(r, 20));
    }
    const s = ctx.stats(samples);
    ctx.print(
      `7. trigger -> delivery.sent webhook received (light load): p50 ${ctx.fmt(s.p50)} ms   p99 ${ctx.fmt(s.p99)} ms   (${ctx.samples} sequential triggers; target p50 <= 50 ms)`,
    );
  } finally {
    if (worker && worker.exitCode === null) {
      worker.kill('SIGTERM');
      await once(worker, 'exit');
    }
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
}

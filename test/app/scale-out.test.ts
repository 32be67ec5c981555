// Scale-out made real: two `herald start --role api` and two `--role worker` processes (the real
// bin/herald) against one PostgreSQL. A trigger to either API reaches a stream opened on the other
// (LISTEN/NOTIFY), and the delivery jobs are shared by both workers (each one's metrics listener
// counts the jobs it ran); API processes run none. One tenant's trigger budget holds across both APIs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERALD_BIN } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { generateKey } from '../../server/base/crypto/keyring.ts';
import { REMOTE_EVENTS_PER_DELIVERY_JOB } from '../../server/delivery/queues.ts';
import pg from 'pg';

const START_TIMEOUT = 120_000;
const METRICS_TOKEN = randomBytes(24).toString('hex');

interface Proc {
  role: 'api' | 'worker';
  child: ChildProcess;
  url: string | null;
  metricsUrl: string;
  stderr: string;
}

let database: TestDatabase;
let dataDir: string;
const procs: Proc[] = [];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

async function startProcess(role: 'api' | 'worker', env: Record<string, string>): Promise<Proc> {
  const metricsPort = await freePort();
  const child = spawn(HERALD_BIN, ['start', '--role', role, '--port', '0', '--no-migrate'], {
    env: { ...process.env, ...env, HERALD_METRICS_LISTEN: `127.0.0.1:${metricsPort}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc: Proc = { role, child, url: null, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, stderr: '' };
  procs.push(proc);
  child.stderr!.on('data', (d) => (proc.stderr += d));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${role} did not start: ${proc.stderr}`)), START_TIMEOUT);
    child.stdout!.on('data', (d) => {
      out += d;
      proc.url ??= /Herald listening on (\S+)/.exec(out)?.[1] ?? null;
      if (/Metrics on /.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`${role} exited ${code}: ${proc.stderr}`)));
  });
  return proc;
}

beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = mkdtempSync(join(tmpdir(), 'herald-scale-'));
  chmodSync(dataDir, 0o711);
  const env = {
    HERALD_HOME: dataDir,
    DATABASE_URL: database.url,
    HERALD_ENCRYPTION_KEYS: `scale1:${generateKey()}`,
    HERALD_MODE: 'multi',
    HERALD_LOG_LEVEL: 'warn',
    HERALD_METRICS_TOKEN: METRICS_TOKEN,
  };
  // One at a time: the first applies nothing (the database is migrated), each registers its queues.
  for (const role of ['api', 'api', 'worker', 'worker'] as const) await startProcess(role, env);
}, 4 * START_TIMEOUT);

afterAll(async () => {
  await Promise.all(
    procs.map(async (p) => {
      if (p.child.exitCode !== null) return;
      const exited = new Promise((resolve) => p.child.once('exit', resolve));
      p.child.kill('SIGTERM');
      await exited;
    }),
  );
  await database?.drop().catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
});

async function call(base: string, method: string, path: string, token: string | null, body?: unknown): Promise<any> {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Reads a contact's stream until a `notification` event arrives; answers its data. */
async function nextNotification(
  base: string,
  contactId: string,
  token: string,
  trigger: () => Promise<void>,
): Promise<{ title: string }> {
  const controller = new AbortController();
  const res = await fetch(`${base}/v1/contacts/${contactId}/stream`, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  expect(res.status).toBe(200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const timer = setTimeout(() => controller.abort(), 30_000);
  let buffer = '';
  let triggered = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended before a notification');
      buffer += value;
      // The connect-time counts event says the stream is live on that process: trigger then.
      if (!triggered && buffer.includes('event: counts')) {
        triggered = true;
        await trigger();
      }
      const block = buffer.split('\n\n').find((b) => b.includes('event: notification'));
      if (block)
        return JSON.parse(
          block
            .split('\n')
            .find((l) => l.startsWith('data: '))!
            .slice(6),
        );
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

function jobsHandled(text: string): number {
  const line = text.split('\n').find((l) => l.startsWith('herald_jobs_handled_total{queue="deliver-event"} '));
  return line ? Number(line.split(' ')[1]) : 0;
}

describe('two API and two worker processes against one PostgreSQL', () => {
  it('fans triggers to streams on the other API and shares the jobs between both workers', async () => {
    const [api1, api2] = procs.filter((p) => p.role === 'api').map((p) => p.url!);
    expect(api1).toBeTruthy();
    expect(api2).toBeTruthy();
    const email = `ops.${randomBytes(4).toString('hex')}@scale.test`;
    const password = 'correct horse battery staple';
    await call(api1!, 'POST', '/v1/auth/register', null, { email, password, tenant_name: 'Scale' });
    const login = await call(api2!, 'POST', '/v1/auth/login', null, { email, password });
    const { key } = await call(api1!, 'POST', '/v1/api-keys', login.access_token, { name: 'scale' });
    await call(api2!, 'POST', '/v1/notification-types', key, {
      key: 'ping',
      channel_defaults: { inbox: true, email: true },
    });
    await call(api1!, 'POST', '/v1/inbox-templates', key, {
      notification_type_key: 'ping',
      title: 'Ping {{ n }}',
      content: 'pong',
    });

    // A stream on each API, a trigger through the other one.
    for (const [streamOn, triggerOn, n] of [
      [api1!, api2!, 1],
      [api2!, api1!, 2],
    ] as const) {
      const external = `fan-${n}`;
      await call(triggerOn, 'POST', '/v1/contacts', key, { external_id: external });
      const minted = await call(triggerOn, 'POST', '/v1/contacts/tokens', key, { external_id: external });
      const item = await nextNotification(streamOn, minted.contact_id, minted.token, async () => {
        await call(triggerOn, 'POST', '/v1/notifications', key, {
          type: 'ping',
          recipients: [external],
          variables: { n },
        });
      });
      expect(item.title).toBe(`Ping ${n}`);
    }

    // A backlog of events with an email delivery (one job each), through both APIs; both workers take jobs.
    const before = await Promise.all(procs.map(async (p) => jobsHandled(await (await fetch(p.metricsUrl)).text())));
    for (let t = 0; t < 6; t++) {
      const recipients = Array.from({ length: 100 }, (_, i) => ({
        external_id: `bulk-${t}-${i}`,
        email: `bulk-${t}-${i}@scale.test`,
      }));
      await call(t % 2 === 0 ? api1! : api2!, 'POST', '/v1/notifications', key, {
        type: 'ping',
        recipients,
        variables: { n: t },
      });
    }
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const deadline = Date.now() + 120_000;
      for (;;) {
        const { rows } = await client.query(
          `SELECT count(*)::int AS n FROM events WHERE status IN ('queued', 'processing')`,
        );
        if (rows[0].n === 0) break;
        if (Date.now() > deadline) throw new Error(`${rows[0].n} events still pending`);
        await new Promise((r) => setTimeout(r, 250));
      }
      const { rows } = await client.query(`SELECT status, count(*)::int AS n FROM events GROUP BY status`);
      expect(rows).toEqual([{ status: 'delivered', n: 602 }]);
    } finally {
      await client.end();
    }
    const after = await Promise.all(procs.map(async (p) => jobsHandled(await (await fetch(p.metricsUrl)).text())));
    const ran = after.map((n, i) => n - before[i]!);
    const [apiRan1, apiRan2, workerRan1, workerRan2] = ran;
    expect(apiRan1).toBe(0);
    expect(apiRan2).toBe(0);
    expect(workerRan1).toBeGreaterThan(0);
    expect(workerRan2).toBeGreaterThan(0);
    // The 600 events (email is a remote channel) share jobs of up to REMOTE_EVENTS_PER_DELIVERY_JOB; some may be retried.
    expect(workerRan1! + workerRan2!).toBeGreaterThanOrEqual(600 / REMOTE_EVENTS_PER_DELIVERY_JOB);
    console.info(`scale-out: jobs run by worker 1: ${workerRan1}, worker 2: ${workerRan2}`);

    // The API port's /metrics (token) reports the install-wide queue depth too.
    const scraped = await fetch(`${api1}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain('herald_queue_depth{queue="deliver-event",state="ready"}');
  });

  it("grants concurrent triggers through both APIs exactly the tenant's burst (each process charges ahead)", async () => {
    const [api1, api2] = procs.filter((p) => p.role === 'api').map((p) => p.url!);
    const email = `limits.${randomBytes(4).toString('hex')}@scale.test`;
    const password = 'correct horse battery staple';
    await call(api1!, 'POST', '/v1/auth/register', null, { email, password, tenant_name: 'Limits' });
    const login = await call(api2!, 'POST', '/v1/auth/login', null, { email, password });
    const { key } = await call(api1!, 'POST', '/v1/api-keys', login.access_token, { name: 'limits' });
    await call(api2!, 'POST', '/v1/notification-types', key, { key: 'ping', channel_defaults: { inbox: true } });
    // 1 per minute, burst 200, set before either process reads the tenant's limits.
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await client.query(
        `INSERT INTO tenant_limits (tenant_id, name, value) SELECT k.tenant_id, l.name, l.value FROM api_keys k, (VALUES ('rate:trigger', 1), ('rate:trigger:burst', 200)) AS l(name, value) WHERE k.name = 'limits'`,
      );
      const fire = (base: string, i: number) =>
        fetch(`${base}/v1/notifications`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'ping', recipients: [`limit-${i}`] }),
        }).then(async (res) => (await res.text(), res.status));
      const statuses = await Promise.all(Array.from({ length: 300 }, (_, i) => fire(i % 2 === 0 ? api1! : api2!, i)));
      expect(statuses.filter((s) => s === 202)).toHaveLength(200);
      expect(statuses.filter((s) => s === 429)).toHaveLength(100);
      const { rows } = await client.query(
        `SELECT count(*)::int AS n FROM events e JOIN api_keys k ON k.tenant_id = e.tenant_id WHERE k.name = 'limits'`,
      );
      expect(rows[0].n).toBe(200);
    } finally {
      await client.end();
    }
  });
});

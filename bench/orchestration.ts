// npm run bench, part 2: orchestration, with Herald as real processes (`herald start --role api` and
// `--role worker`) on a fresh database. Bounded in count and time. Prints:
//   1. scheduled sends: BENCH_SCHEDULED events (default 10,000, in triggers of 100) all due at the
//      same second T. The worker's CPU seconds during a 10 s idle wait before T (waiting must cost
//      nothing per event), then each event's lateness (its inbox item's time minus T): p50, p99, max,
//      and how many ran by T + 1 s.
//   2. digest: BENCH_DIGEST_EVENTS (default 100,000) events over BENCH_DIGEST_CONTACTS (default 1,000)
//      contacts of a type whose workflow is a digest (one window per contact) then the inbox: the time
//      until every event has joined its digest or opened one, with the CPU per event of the worker and
//      of PostgreSQL, the number of digests, then the time until every digest is delivered once its
//      window has closed.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { execute } from '../server/base/db/sql.ts';
import { newId } from '../server/base/ids.ts';
import { startRuntime, stopRuntime } from '../server/app/runtime.ts';
import { KeepAliveConnection } from './keep-alive-client.ts';
import {
  benchInstall,
  benchTenant,
  cleanups,
  fmt,
  freePort,
  heraldEnv,
  print,
  runBench,
  sleep,
  startHerald,
  stats,
} from './support.ts';

const SCHEDULED = Number(process.env.BENCH_SCHEDULED ?? 10_000);
const DIGEST_EVENTS = Number(process.env.BENCH_DIGEST_EVENTS ?? 100_000);
const DIGEST_CONTACTS = Number(process.env.BENCH_DIGEST_CONTACTS ?? 1_000);
const DIGEST_WINDOW_SECONDS = Number(process.env.BENCH_DIGEST_WINDOW ?? 240);
const IDLE_WAIT_MS = 10_000;
const PER_TRIGGER = 100;
const CONCURRENCY = 16;

/** CPU seconds a process has used so far (Linux /proc; null elsewhere). */
function processCpuSeconds(pid: number): number | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** PostgreSQL's CPU seconds so far, all its processes (Linux, database on this machine; null otherwise). */
async function databaseCpuSeconds(db: pg.Client): Promise<number | null> {
  try {
    const backend = Number((await db.query(`SELECT pg_backend_pid() AS pid`)).rows[0].pid);
    const postmaster = Number(readFileSync(`/proc/${backend}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
    const { readdirSync } = await import('node:fs');
    let total = 0;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ');
        if (Number(fields[1]) === postmaster || Number(entry) === postmaster)
          total += Number(fields[11]) + Number(fields[12]);
      } catch {
        // exited meanwhile
      }
    }
    return total / 100;
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  const { dataDir, url, encryptionKeys, config } = await benchInstall('herald-bench-orch-');
  const setup = await startRuntime(config, { role: 'api', queue: true, poolMax: 4 });
  const em = setup.orm.em.fork();
  const { tenant, apiKey } = await benchTenant(em, 'Orchestration');
  const workflow = {
    steps: [
      { kind: 'digest', window_seconds: DIGEST_WINDOW_SECONDS, max_events: 10 },
      { kind: 'channel', channel: 'inbox' },
    ],
  };
  await execute(
    em,
    `INSERT INTO notification_types (id, tenant_id, key, name, channel_defaults, workflow)
     VALUES ($1, $3, 'scheduled', 'Scheduled', '{"inbox": true}', NULL), ($2, $3, 'digest', 'Digest', '{"inbox": true}', $4::jsonb)`,
    [newId(), newId(), tenant.id, JSON.stringify(workflow)],
  );
  await execute(
    em,
    `INSERT INTO inbox_templates (id, tenant_id, notification_type_key, brand_key, language, title, content)
     VALUES ($1, $3, 'scheduled', 'default', 'en', 'Due {{ n }}', 'now'), ($2, $3, 'digest', 'default', 'en', '{{ digest.count }} new', 'digest')`,
    [newId(), newId(), tenant.id],
  );
  await stopRuntime(setup);

  const port = await freePort();
  const env = heraldEnv({ dataDir, url, encryptionKeys }, port);
  await startHerald(['--role', 'api'], env, 'Herald listening');
  const worker = await startHerald(['--role', 'worker'], env, null);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  cleanups.push(() => db.end());
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  /** Sends `count` triggers, CONCURRENCY at a time, on connections of its own (idle ones are closed by the server). */
  const triggerAll = async (count: number, body: (i: number) => Record<string, unknown>) => {
    const connections = await Promise.all(Array.from({ length: CONCURRENCY }, () => KeepAliveConnection.open(port)));
    let next = 0;
    try {
      await Promise.all(
        connections.map(async (connection) => {
          while (next < count) {
            const i = next++;
            const res = await connection.request('POST', '/v1/notifications', headers, JSON.stringify(body(i)));
            if (res.status !== 202) throw new Error(`trigger answered ${res.status}: ${res.body}`);
          }
        }),
      );
    } finally {
      for (const connection of connections) connection.close();
    }
  };
  await sleep(2000); // the worker process starts

  // 1. Scheduled sends, all due in the same second.
  const triggers = Math.ceil(SCHEDULED / PER_TRIGGER);
  const dueAt = Math.ceil((Date.now() + 5_000 + IDLE_WAIT_MS) / 1000) * 1000;
  const sendAt = new Date(dueAt).toISOString();
  const t0 = performance.now();
  await triggerAll(triggers, (i) => ({
    type: 'scheduled',
    recipients: Array.from({ length: PER_TRIGGER }, (_, k) => `s${i}_${k}`),
    variables: { n: i },
    send_at: sendAt,
  }));
  print(
    `scheduled: ${triggers * PER_TRIGGER} events in ${triggers} triggers, accepted in ${fmt((performance.now() - t0) / 1000)} s, due at ${sendAt}`,
  );
  if (Date.now() + IDLE_WAIT_MS > dueAt)
    throw new Error('the triggers took too long: no idle window left before the due time');
  const idleBefore = processCpuSeconds(worker.pid!);
  await sleep(IDLE_WAIT_MS);
  const idleAfter = processCpuSeconds(worker.pid!);
  print(
    `  worker CPU while ${triggers * PER_TRIGGER} events wait, ${IDLE_WAIT_MS / 1000} s idle: ${idleBefore === null ? 'n/a' : `${(idleAfter! - idleBefore).toFixed(2)} s`}`,
  );
  for (const deadline = dueAt + 60_000; ;) {
    const { n } = (await db.query(`SELECT count(*)::int AS n FROM inbox_items WHERE type_key = 'scheduled'`)).rows[0];
    if (n >= triggers * PER_TRIGGER) break;
    if (Date.now() > deadline) throw new Error(`only ${n} scheduled items after 60 s`);
    await sleep(100);
  }
  const lateness = (
    await db.query(
      `SELECT extract(epoch FROM created_at) * 1000 - $1 AS ms FROM inbox_items WHERE type_key = 'scheduled'`,
      [dueAt],
    )
  ).rows.map((r: { ms: string }) => Number(r.ms));
  const late = stats(lateness);
  const onTime = lateness.filter((ms) => ms <= 1000).length;
  print(
    `  lateness after T: p50 ${fmt(late.p50)} ms, p99 ${fmt(late.p99)} ms, max ${fmt(Math.max(...lateness))} ms; ${onTime} of ${lateness.length} by T + 1 s`,
  );

  // 2. Digest: one window per contact.
  const digestTriggers = Math.ceil(DIGEST_EVENTS / PER_TRIGGER);
  const groups = Math.max(1, Math.floor(DIGEST_CONTACTS / PER_TRIGGER));
  const cpu0 = { worker: processCpuSeconds(worker.pid!), database: await databaseCpuSeconds(db) };
  const d0 = performance.now();
  await triggerAll(digestTriggers, (i) => ({
    type: 'digest',
    recipients: Array.from({ length: PER_TRIGGER }, (_, k) => `d${i % groups}_${k}`),
    variables: { n: i },
  }));
  const accepted = (performance.now() - d0) / 1000;
  for (const deadline = Date.now() + 600_000; ;) {
    // Each digest counts its opener and every event it took in, in the transaction that takes it in.
    // Counting the events themselves read all 100,000 of them (100 ms of PostgreSQL's CPU per poll,
    // a third of a core), which the CPU per event then counted as Herald's.
    const { n } = (
      await db.query(`SELECT coalesce(sum(count), 0)::int AS n FROM digests WHERE tenant_id = $1`, [tenant.id])
    ).rows[0];
    if (n >= digestTriggers * PER_TRIGGER) break;
    if (Date.now() > deadline) throw new Error(`only ${n} digest events taken in after 600 s`);
    await sleep(200);
  }
  const takenIn = (performance.now() - d0) / 1000;
  const cpu1 = { worker: processCpuSeconds(worker.pid!), database: await databaseCpuSeconds(db) };
  const events = digestTriggers * PER_TRIGGER;
  const digests = (await db.query(`SELECT count(*)::int AS n FROM digests WHERE tenant_id = $1`, [tenant.id])).rows[0]
    .n;
  const perEvent = (a: number | null, b: number | null) =>
    a === null || b === null ? 'n/a' : `${fmt(((b - a) / events) * 1e6)} us`;
  print(
    `digest: ${events} events over ${groups * PER_TRIGGER} contacts, accepted in ${fmt(accepted)} s, all taken into ${digests} digests after ${fmt(takenIn)} s (${fmt(events / takenIn)} events/s)`,
  );
  print(
    `  CPU per event: worker ${perEvent(cpu0.worker, cpu1.worker)}, PostgreSQL ${perEvent(cpu0.database, cpu1.database)}`,
  );
  // The last window to close: a take-in slower than the window opens later windows for the same contacts.
  const lastWindowEnd = (
    await db.query(
      `SELECT (extract(epoch FROM max(window_end)) * 1000)::float8 AS ms FROM digests WHERE tenant_id = $1`,
      [tenant.id],
    )
  ).rows[0].ms as number;
  const windowsEnd = Math.max(Date.now(), lastWindowEnd);
  for (const deadline = windowsEnd + 120_000; ;) {
    const { n } = (await db.query(`SELECT count(*)::int AS n FROM inbox_items WHERE type_key = 'digest'`)).rows[0];
    if (n >= digests) break;
    if (Date.now() > deadline) throw new Error(`only ${n} of ${digests} digests delivered`);
    await sleep(200);
  }
  print(`  every digest delivered ${fmt((Date.now() - windowsEnd) / 1000)} s after the windows' end`);
}

await runBench(main);

// npm run bench (second part): audiences. Herald runs as real processes on a fresh database
// (DATABASE_URL's server, else an embedded PostgreSQL): `herald start --role api` and `--role worker`.
// Prints:
//   6. contact import: POST /v1/contacts/import of BENCH_AUDIENCE_CONTACTS NDJSON contacts (default
//      100,000), streamed by this process as it generates them: contacts/s
//   7. a broadcast to all of them (inbox channel): the fan-out's time, and the time from the 202 to every
//      inbox item stored, with items/s; meanwhile another tenant sends 1-recipient triggers (20/s): their
//      HTTP latency (beside the same probe's just before the broadcast) and their delivery latency (event
//      created -> inbox item stored), p50/p99, and the worker process's RSS growth over the fan-out (the
//      fan-out runs there); and the CPU seconds per 100,000 contacts of each phase, with the share of
//      the machine's CPU time its hypervisor stole meanwhile.
// BENCH_AUDIENCE_CONTACTS=1000000 is the large run: then the broadcast is followed through its fan-out
// and BENCH_AUDIENCE_FOLLOW_SECONDS (default 30) of delivery after it, and canceled (delivering a
// million inbox items takes minutes on a small machine); the figures are taken over that window.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { startRuntime, stopRuntime } from '../server/app/runtime.ts';
import { execute } from '../server/base/db/sql.ts';
import { newId } from '../server/base/ids.ts';
import { KeepAliveConnection } from './keep-alive-client.ts';
import {
  benchInstall,
  benchTenant,
  cleanups,
  fmt,
  fmtStolen,
  freePort,
  heraldEnv,
  machineTicks,
  print,
  runBench,
  sleep,
  startHerald,
  stats,
  stolenShare,
  type MachineTicks,
} from './support.ts';

const CONTACTS = Number(process.env.BENCH_AUDIENCE_CONTACTS ?? 100_000);
/** Above this audience the broadcast is not followed to its end (see the header). */
const FOLLOW_WHOLE_UP_TO = 200_000;
const FOLLOW_SECONDS = Number(process.env.BENCH_AUDIENCE_FOLLOW_SECONDS ?? 30);
const PROBE_INTERVAL_MS = 50;

async function main(): Promise<void> {
  const { dataDir, url, encryptionKeys, config } = await benchInstall('herald-bench-audiences-');

  // Two tenants: one broadcasts, the other triggers meanwhile. Both have an inbox-only type.
  const setup = await startRuntime(config, { role: 'api', queue: true, poolMax: 4 });
  const em = setup.orm.em.fork();
  const keys: string[] = [];
  for (const name of ['Broadcaster', 'Other']) {
    const { tenant, apiKey } = await benchTenant(em, name);
    keys.push(apiKey);
    await execute(
      em,
      `INSERT INTO notification_types (id, tenant_id, key, name, channel_defaults) VALUES ($1, $2, 'bench', 'Bench', '{"inbox": true}')`,
      [newId(), tenant.id],
    );
    await execute(
      em,
      `INSERT INTO inbox_templates (id, tenant_id, notification_type_key, brand_key, language, title, content) VALUES ($1, $2, 'bench', 'default', 'en', 'Hello {{ contact.external_id }}', 'News {{ headline }}')`,
      [newId(), tenant.id],
    );
  }
  await stopRuntime(setup);
  const [broadcasterKey, otherKey] = keys as [string, string];

  const port = await freePort();
  const env = heraldEnv({ dataDir, url, encryptionKeys }, port);
  const api = await startHerald(['--role', 'api'], env, 'Herald listening');
  const worker = await startHerald(['--role', 'worker'], env, null);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  cleanups.push(() => db.end());
  await workerReady(`http://127.0.0.1:${port}`, otherKey, db); // its start-up is not the import's cost
  const base = `http://127.0.0.1:${port}`;
  print(`Herald audiences benchmark (loopback; ${CONTACTS} contacts; the machine is shared: figures are indicative)`);

  // 6. Import, streamed as generated.
  async function* ndjson(): AsyncGenerator<Uint8Array> {
    const LINES_PER_CHUNK = 1000;
    for (let start = 0; start < CONTACTS; start += LINES_PER_CHUNK) {
      let text = '';
      for (let i = start; i < Math.min(CONTACTS, start + LINES_PER_CHUNK); i++)
        text += `{"external_id":"user-${i}","email":"user-${i}@example.test","name":"User ${i}"}\n`;
      yield Buffer.from(text);
    }
  }
  const apiRssBefore = rssOf(api.pid!);
  const importCpu = await cpuNow(db, api.pid!, worker.pid!);
  const importStarted = performance.now();
  const imported = await fetch(`${base}/v1/contacts/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${broadcasterKey}`, 'content-type': 'application/x-ndjson' },
    body: ndjson() as unknown as BodyInit,
    duplex: 'half',
  } as RequestInit);
  const importBody = (await imported.json()) as { created: number; refused: number };
  const importSeconds = (performance.now() - importStarted) / 1000;
  if (imported.status !== 200 || importBody.created !== CONTACTS)
    throw new Error(`import answered ${imported.status}: ${JSON.stringify(importBody)}`);
  print(
    `6. contact import (NDJSON, streamed): ${fmt(CONTACTS / importSeconds)} contacts/s   (${CONTACTS} in ${importSeconds.toFixed(1)} s; API RSS ${mb(apiRssBefore)} -> ${mb(rssOf(api.pid!))} MB; target >= 50000/s)`,
  );
  print(`   ${cpuLine(importCpu, await cpuNow(db, api.pid!, worker.pid!), CONTACTS)}`);
  await db.query(`ANALYZE contacts`);

  // 7. The broadcast, with the other tenant's triggers as a probe.
  const probe = await KeepAliveConnection.open(port);
  cleanups.push(async () => probe.close());
  const probeHeaders = { authorization: `Bearer ${otherKey}`, 'content-type': 'application/json' };
  const probeOnce = async (i: number) => {
    const t0 = performance.now();
    const res = await probe.request(
      'POST',
      '/v1/notifications',
      probeHeaders,
      JSON.stringify({ type: 'bench', recipients: [`probe-${i % 100}`], variables: { headline: 'probe' } }),
    );
    if (res.status !== 202) throw new Error(`probe trigger answered ${res.status}: ${res.body}`);
    return performance.now() - t0;
  };
  for (let i = 0; i < 20; i++) await probeOnce(i); // warm-up
  // The same probe before the broadcast, at the same pace: what the machine's load alone gives.
  const quiet: number[] = [];
  for (let i = 0; i < 100; i++) {
    const started = performance.now();
    quiet.push(await probeOnce(i));
    await sleep(Math.max(0, PROBE_INTERVAL_MS - (performance.now() - started)));
  }
  const probeStart = (await db.query(`SELECT now() AS t`)).rows[0].t as Date;
  const workerRssBefore = rssOf(worker.pid!);
  let workerRssMax = workerRssBefore;
  const latencies: number[] = [];
  let probing = true;
  const probing$ = (async () => {
    for (let i = 0; probing; i++) {
      const started = performance.now();
      latencies.push(await probeOnce(i));
      workerRssMax = Math.max(workerRssMax, rssOf(worker.pid!));
      await sleep(Math.max(0, PROBE_INTERVAL_MS - (performance.now() - started)));
    }
  })();

  const broadcastCpu = await cpuNow(db, api.pid!, worker.pid!);
  const t0 = performance.now();
  const accepted = await fetch(`${base}/v1/broadcasts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${broadcasterKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'bench', audience: { all_contacts: true }, variables: { headline: 'launch' } }),
  });
  const { broadcast_id: id } = (await accepted.json()) as { broadcast_id: string };
  if (accepted.status !== 202) throw new Error(`broadcast answered ${accepted.status}`);
  const acceptedMs = performance.now() - t0;
  let fannedOutSeconds: number | null = null;
  let storedSeconds: number | null = null;
  let stored = 0;
  const followWhole = CONTACTS <= FOLLOW_WHOLE_UP_TO;
  for (let deadline = Date.now() + (followWhole ? 600_000 : 3_600_000); ;) {
    const row = (
      await db.query(`SELECT fanned_out_at IS NOT NULL AS done, events_created FROM broadcasts WHERE id = $1`, [id])
    ).rows[0];
    if (fannedOutSeconds === null && row.done) fannedOutSeconds = (performance.now() - t0) / 1000;
    // The poll stops at the first event not delivered yet (through the events' unique index on the
    // broadcast), so it costs the database little while the broadcast runs; counted only at the end.
    const all =
      row.events_created >= CONTACTS &&
      (
        await db.query(
          `SELECT NOT EXISTS (SELECT 1 FROM events WHERE broadcast_id = $1 AND status <> 'delivered') AS all`,
          [id],
        )
      ).rows[0].all;
    if (all) {
      stored = CONTACTS;
      storedSeconds = (performance.now() - t0) / 1000;
      break;
    }
    if (
      !followWhole &&
      fannedOutSeconds !== null &&
      (performance.now() - t0) / 1000 > fannedOutSeconds + FOLLOW_SECONDS
    ) {
      stored = Number(
        (await db.query(`SELECT count(*) AS n FROM events WHERE broadcast_id = $1 AND status = 'delivered'`, [id]))
          .rows[0].n,
      );
      break;
    }
    if (Date.now() > deadline) throw new Error(`broadcast not done: ${JSON.stringify(row)}, ${stored} delivered`);
    await sleep(200);
  }
  probing = false;
  await probing$;
  const window = (performance.now() - t0) / 1000;
  const broadcastCpuAfter = await cpuNow(db, api.pid!, worker.pid!);
  if (!followWhole)
    await fetch(`${base}/v1/broadcasts/${id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${broadcasterKey}` },
    });
  const http = stats(latencies);
  const before = stats(quiet);
  const delivery = (
    await db.query(
      `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99, count(*)::int AS n
         FROM (SELECT extract(epoch FROM i.created_at - e.created_at) * 1000 AS ms
                 FROM events e JOIN inbox_items i ON i.event_id = e.id
                WHERE e.external_id LIKE 'probe-%' AND e.created_at >= $1) AS d`,
      [probeStart],
    )
  ).rows[0];
  const items =
    storedSeconds !== null
      ? `every item stored ${storedSeconds.toFixed(1)} s after the 202 = ${fmt(CONTACTS / storedSeconds)} items/s (target <= 10 s)`
      : `${stored} items stored in ${window.toFixed(1)} s = ${fmt(stored / window)} items/s, then canceled`;
  print(
    `7. broadcast to ${CONTACTS} contacts (inbox): 202 in ${fmt(acceptedMs)} ms; fan-out done after ${fannedOutSeconds?.toFixed(1) ?? '?'} s; ${items}`,
  );
  print(`   ${cpuLine(broadcastCpu, broadcastCpuAfter, stored)} (the other tenant's triggers included)`);
  print(
    `   worker RSS ${mb(workerRssBefore)} MB -> at most ${mb(workerRssMax)} MB during it (growth ${mb(workerRssMax - workerRssBefore)} MB; target <= 100 MB)`,
  );
  print(
    `   another tenant's 1-recipient triggers meanwhile (${latencies.length}, one every ${PROBE_INTERVAL_MS} ms): HTTP p50 ${fmt(http.p50)} ms, p99 ${fmt(http.p99)} ms (target <= 100 ms; before the broadcast p50 ${fmt(before.p50)} ms, p99 ${fmt(before.p99)} ms); delivered (event -> inbox item) p50 ${fmt(Number(delivery.p50))} ms, p99 ${fmt(Number(delivery.p99))} ms (${delivery.n} items)`,
  );
}

/** Waits until the worker delivers: one trigger of the other tenant, its event delivered. */
async function workerReady(base: string, apiKey: string, db: pg.Client): Promise<void> {
  const res = await fetch(`${base}/v1/notifications`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'bench', recipients: ['warm-up'], variables: { headline: 'warm-up' } }),
  });
  const { events } = (await res.json()) as { events: Array<{ event_id: string }> };
  for (let deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(100)) {
    const row = (await db.query(`SELECT status FROM events WHERE id = $1`, [events[0]!.event_id])).rows[0];
    if (row?.status === 'delivered') return;
  }
  throw new Error('the worker delivered nothing within 120 s');
}

/** CPU seconds (user + system) a process has used so far (Linux), or 0 once it is gone. */
function cpuOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return 0;
  }
}

/**
 * CPU seconds of the API process, the worker process and the database's backends (those serving this
 * benchmark's database, except the benchmark's own connection), read now; differences of two readings
 * give a phase's CPU, which holds better than wall time on a loaded machine.
 */
async function cpuNow(
  db: pg.Client,
  api: number,
  worker: number,
): Promise<{ api: number; worker: number; pg: Map<number, number>; machine: MachineTicks | null }> {
  const backends = await db.query(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
  );
  return {
    api: cpuOf(api),
    worker: cpuOf(worker),
    pg: new Map(backends.rows.map((r: { pid: number }) => [r.pid, cpuOf(r.pid)])),
    machine: machineTicks(),
  };
}

/** A phase's CPU seconds per 100,000 contacts, as printed. */
function cpuLine(
  before: Awaited<ReturnType<typeof cpuNow>>,
  after: Awaited<ReturnType<typeof cpuNow>>,
  contacts: number,
): string {
  let pgSeconds = 0;
  for (const [pid, seconds] of after.pg) pgSeconds += seconds - (before.pg.get(pid) ?? 0);
  const per = (seconds: number) => ((seconds * 100_000) / contacts).toFixed(1);
  return (
    `CPU s per 100k contacts: API ${per(after.api - before.api)}, worker ${per(after.worker - before.worker)}, PostgreSQL backends ${per(pgSeconds)}` +
    fmtStolen(stolenShare(before.machine, after.machine))
  );
}

/** Resident set size of a process in bytes (Linux), or 0. */
function rssOf(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) * 1024 : 0;
  } catch {
    return 0;
  }
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);

await runBench(main);

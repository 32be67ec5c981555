// Footprint lines of `npm run bench`: what a CLI call costs, and what the whole appliance holds.
//   1. `herald --version`, 2. `herald send --help`, 3. a `herald send` round trip to a running Herald:
//      wall time, CPU time and peak RSS of the process (medians of RUNS, after a warm-up that fills
//      the compile cache)
//   4. the appliance's memory, idle and during a burst of triggers: proportional set size (Pss of
//      /proc/PID/smaps_rollup, so that pages shared between processes count once) of the Herald
//      process plus every process of its embedded PostgreSQL. This install is made by `herald init`
//      with the embedded PostgreSQL whatever DATABASE_URL says: the figure is the appliance's.
// The figures are whole processes timed from outside, so they move with the machine's load.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  HERALD_BIN,
  benchDataDir,
  cleanups,
  fmt,
  freePort,
  print,
  runBench,
  sleep,
  startHerald,
  stats,
} from './support.ts';

const RUNS = Number(process.env.BENCH_FOOTPRINT_RUNS ?? 5);
const BURST_TRIGGERS = Number(process.env.BENCH_FOOTPRINT_TRIGGERS ?? 3000);
const BURST_CONCURRENCY = 16;
const IDLE_SETTLE_MS = 10_000;
/** The appliance's own environment: no external database, whatever this shell has. */
const APPLIANCE_ENV = { DATABASE_URL: undefined, HERALD_DATABASE_URL: undefined, HERALD_HOME: undefined };

// Printed by the CLI process itself as it exits (bin/herald execs Node, so it is the whole process):
// its peak RSS and CPU time, which, unlike the wall time, hardly move with the machine's load.
const EXIT_REPORT_HOOK = `--import=data:text/javascript,import{writeSync}from'node:fs';process.on('exit',()=>{const{userCPUTime:u,systemCPUTime:s,maxRSS:m}=process.resourceUsage();writeSync(2,'\\nfootprint-kb='+m+',cpu-us='+(u+s)+'\\n')})`;

interface Run {
  code: number | null;
  ms: number;
  stdout: string;
  stderr: string;
}

function runHerald(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(HERALD_BIN, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, ms: performance.now() - t0, stdout, stderr }));
  });
}

/** Medians over RUNS calls, after one warm-up (which fills the compile cache); every call must exit 0. */
async function measureCli(args: string[]): Promise<{ wallMs: number; cpuMs: number; peakMb: number }> {
  const walls: number[] = [];
  const cpus: number[] = [];
  const peaks: number[] = [];
  for (let i = 0; i <= RUNS; i++) {
    const run = await runHerald(args, { NODE_OPTIONS: EXIT_REPORT_HOOK });
    if (run.code !== 0) throw new Error(`herald ${args.join(' ')} exited with ${run.code}: ${run.stderr.trim()}`);
    const report = /footprint-kb=(\d+),cpu-us=(\d+)/.exec(run.stderr);
    if (!report) throw new Error(`herald ${args.join(' ')} did not report its footprint: ${run.stderr.trim()}`);
    if (i === 0) continue;
    walls.push(run.ms);
    peaks.push(Number(report[1]) / 1024);
    cpus.push(Number(report[2]) / 1000);
  }
  return { wallMs: stats(walls).p50, cpuMs: stats(cpus).p50, peakMb: stats(peaks).p50 };
}

const describeCli = (m: { wallMs: number; cpuMs: number; peakMb: number }) =>
  `${fmt(m.wallMs)} ms wall, ${fmt(m.cpuMs)} ms CPU, peak RSS ${fmt(m.peakMb)} MB (medians of ${RUNS})`;

function pssKb(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0; // the process ended between listing and reading (a backend closing)
  }
}

/** The postmaster of the data directory's cluster and its children (backends, checkpointer, ...). */
function postgresPids(dataDir: string): number[] {
  let postmaster: number;
  try {
    postmaster = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return []; // the cluster is stopping (a failed run's clean-up)
  }
  const children = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        // The parent pid is the second field after the parenthesised command name.
        return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === postmaster;
      } catch {
        return false;
      }
    })
    .map(Number);
  return [postmaster, ...children];
}

function appliancePss(heraldPid: number, dataDir: string): { herald: number; postgres: number; processes: number } {
  const pg = postgresPids(dataDir);
  const postgres = pg.reduce((sum, pid) => sum + pssKb(pid), 0);
  return { herald: pssKb(heraldPid) / 1024, postgres: postgres / 1024, processes: pg.length };
}

async function main(): Promise<void> {
  print('Herald footprint (the CLI as a CI script calls it; the appliance with its embedded PostgreSQL)');
  print(`1. herald --version: ${describeCli(await measureCli(['--version']))}   (target <= 150 ms wall)`);
  print(`2. herald send --help: ${describeCli(await measureCli(['send', '--help']))}   (without the server's modules)`);

  const dataDir = join(benchDataDir('herald-footprint'), 'data');
  const port = await freePort();
  const admin = async (args: string[]) => {
    const run = await runHerald([...args, '--data-dir', dataDir, '--json'], APPLIANCE_ENV);
    if (run.code !== 0) throw new Error(`herald ${args[0]} exited with ${run.code}: ${run.stderr.trim()}`);
    return JSON.parse(run.stdout) as Record<string, unknown>;
  };
  const { tenant_id: tenantId } = await admin([
    'init',
    '--yes',
    '--tenant',
    'Footprint',
    '--owner-email',
    'ops@footprint.test',
    '--port',
    String(port),
  ]);
  await admin([
    'tenants',
    'limits',
    String(tenantId),
    '--set',
    'rate:trigger=10000000',
    '--set',
    'rate:trigger:burst=10000000',
  ]);
  const { key: apiKey } = await admin(['api-keys', 'issue', '--name', 'footprint']);

  const herald = await startHerald(
    ['--data-dir', dataDir, '--port', String(port)],
    { ...APPLIANCE_ENV, HERALD_LOG_LEVEL: 'warn' },
    'Herald listening',
  );
  cleanups.push(async () => {
    if (herald.exitCode === null && herald.signalCode === null) herald.kill('SIGTERM');
    await new Promise((resolve) => (herald.exitCode === null ? herald.once('exit', resolve) : resolve(null)));
  });
  const base = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${String(apiKey)}`, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    if (res.status !== 201 && res.status !== 202)
      throw new Error(`POST ${path} answered ${res.status}: ${await res.text()}`);
  };
  await post('/v1/notification-types', { key: 'footprint', channel_defaults: { inbox: true, email: false } });
  await post('/v1/inbox-templates', {
    notification_type_key: 'footprint',
    title: 'Hello {{ contact.external_id }}',
    content: 'Build {{ build }} finished',
  });

  const send = await measureCli([
    'send',
    '--type',
    'footprint',
    '--to',
    'ci',
    '--var',
    'build=1',
    '--url',
    base,
    '--api-key',
    String(apiKey),
  ]);
  print(`3. herald send, round trip to a running Herald: ${describeCli(send)}   (target <= 300 ms wall)`);

  await sleep(IDLE_SETTLE_MS);
  const idleSamples = [];
  for (let i = 0; i < 5; i++) {
    idleSamples.push(appliancePss(herald.pid!, dataDir));
    await sleep(1000);
  }
  const idle = idleSamples.sort((a, b) => a.herald + a.postgres - (b.herald + b.postgres))[2]!;
  print(
    `4. appliance idle, proportional set size: ${fmt(idle.herald + idle.postgres)} MB = Herald ${fmt(idle.herald)} MB + embedded PostgreSQL ${fmt(idle.postgres)} MB (${idle.processes} processes; median of 5 samples)   (target <= 200 MB)`,
  );

  // A burst of 1-recipient triggers (inbox delivery by the same process), sampled every 200 ms until the inbox items are all in.
  let peak = idle;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const now = appliancePss(herald.pid!, dataDir);
      if (now.herald + now.postgres > peak.herald + peak.postgres) peak = now;
      await sleep(200);
    }
  })();
  let sent = 0;
  const t0 = performance.now();
  cleanups.push(async () => {
    sampling = false;
  });
  await Promise.all(
    Array.from({ length: BURST_CONCURRENCY }, async () => {
      while (sent < BURST_TRIGGERS) {
        sent++;
        await post('/v1/notifications', {
          type: 'footprint',
          recipients: [`c${sent % 100}`],
          variables: { build: sent },
        });
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await sleep(3000); // the delivery of the last triggers' items
  sampling = false;
  await sampler;
  print(
    `   during a burst of ${BURST_TRIGGERS} triggers (${fmt(BURST_TRIGGERS / seconds)} req/s, ${BURST_CONCURRENCY} concurrent) and their delivery: at most ${fmt(peak.herald + peak.postgres)} MB = Herald ${fmt(peak.herald)} MB + PostgreSQL ${fmt(peak.postgres)} MB   (target <= 500 MB)`,
  );
}

await runBench(main);

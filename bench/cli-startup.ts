// How long the host's local admin commands take against a running Herald (`node bench/cli-startup.ts`;
// not part of `npm run bench`): a single-tenant install made by `herald init` on a fresh database
// (DATABASE_URL's server, else an embedded PostgreSQL), `herald start` on it, then each command run
// RUNS times after a warm-up that fills the compile cache. Per command: the median wall time, and the
// median CPU time (user + system) of the process, which moves less with the machine's load than the
// wall time does; `herald --version` is the floor every command pays. BENCH_CLI_BASELINE=<another
// checkout's bin/herald> measures that one too, its runs taking turns with this checkout's, so that both
// see the same load.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HERALD_BIN, benchDataDir, cleanups, fmt, freePort, freshDatabase, print, runBench, stats } from './support.ts';

const RUNS = Number(process.env.BENCH_CLI_RUNS ?? 7);
const BASELINE = process.env.BENCH_CLI_BASELINE;

// Printed by the CLI process itself as it exits (bin/herald execs Node, so it is the whole process).
const EXIT_REPORT_HOOK = `--import=data:text/javascript,import{writeSync}from'node:fs';process.on('exit',()=>{const{userCPUTime:u,systemCPUTime:s}=process.resourceUsage();writeSync(2,'\\ncli-cpu-us='+(u+s)+'\\n')})`;

interface Run {
  code: number | null;
  ms: number;
  stdout: string;
  stderr: string;
}

function runHerald(args: string[], env: Record<string, string | undefined>, bin = HERALD_BIN): Promise<Run> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, ms: performance.now() - t0, stdout, stderr }));
  });
}

interface Measured {
  wallMs: number;
  cpuMs: number;
}

/** Medians per executable over RUNS calls each (after one warm-up each), the executables taking turns. */
async function measure(
  bins: string[],
  args: (run: number) => string[],
  env: Record<string, string | undefined>,
): Promise<Measured[]> {
  const walls = bins.map(() => [] as number[]);
  const cpus = bins.map(() => [] as number[]);
  for (let i = 0; i <= RUNS; i++) {
    for (const [b, bin] of bins.entries()) {
      const command = args(i * bins.length + b);
      const run = await runHerald(command, { ...env, NODE_OPTIONS: EXIT_REPORT_HOOK }, bin);
      if (run.code !== 0) throw new Error(`${bin} ${command.join(' ')} exited with ${run.code}: ${run.stderr.trim()}`);
      const cpu = /cli-cpu-us=(\d+)/.exec(run.stderr);
      if (!cpu) throw new Error(`${bin} ${command.join(' ')} did not report its CPU time`);
      if (i === 0) continue;
      walls[b]!.push(run.ms);
      cpus[b]!.push(Number(cpu[1]) / 1000);
    }
  }
  return bins.map((_, b) => ({ wallMs: stats(walls[b]!).p50, cpuMs: stats(cpus[b]!).p50 }));
}

const describe = (m: Measured) => `${fmt(m.wallMs).padStart(6)} ms wall ${fmt(m.cpuMs).padStart(6)} ms CPU`;

await runBench(async () => {
  const root = benchDataDir('herald-bench-cli');
  const dataDir = join(root, 'data');
  const databaseUrl = await freshDatabase(root);
  // The operator's shell: herald.json names the database; nothing else comes from the environment.
  const env = { DATABASE_URL: undefined, HERALD_DATABASE_URL: undefined, HERALD_HOME: dataDir, HERALD_URL: undefined };
  const port = await freePort();
  const init = await runHerald(
    [
      'init',
      '--yes',
      '--data-dir',
      dataDir,
      '--database-url',
      databaseUrl,
      '--port',
      String(port),
      '--tenant',
      'Bench',
      '--owner-email',
      'owner@bench.test',
    ],
    env,
  );
  if (init.code !== 0) throw new Error(`herald init failed: ${init.stderr}`);
  const server = spawn(HERALD_BIN, ['start', '--data-dir', dataDir], {
    env: { ...process.env, ...env, HERALD_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanups.push(async () => {
    if (server.exitCode === null) server.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    server.stdout!.on('data', (d) => ((out += d), out.includes('Herald listening on') && resolve()));
    server.on('exit', (code) => reject(new Error(`herald start exited with ${code}`)));
  });
  const exported = await runHerald(['export'], env);
  if (exported.code !== 0) throw new Error(`herald export failed: ${exported.stderr}`);
  const yamlFile = join(root, 'herald.yaml');
  writeFileSync(yamlFile, exported.stdout);

  print(`Herald CLI start-up, local admin commands against a running Herald (medians of ${RUNS})`);
  if (BASELINE) print(`  ${''.padEnd(30)} ${'baseline'.padEnd(25)} this checkout`);
  const commands: Array<[string, (run: number) => string[]]> = [
    ['--version', () => ['--version']],
    ['status', () => ['status']],
    ['export', () => ['export']],
    ['apply -f (no change)', () => ['apply', '-f', yamlFile]],
    ['backup --out', (run) => ['backup', '--out', join(root, `backup-${run}.gz`)]],
    ['keys list', () => ['keys', 'list']],
    ['keys rotate --resume', () => ['keys', 'rotate', '--resume']],
    ['tenants list', () => ['tenants', 'list']],
    ['users create', (run) => ['users', 'create', `user-${run}@bench.test`, '--password', 'bench password 1']],
    [
      'transports email set-default',
      () => ['transports', 'email', 'set-default', '--host', 'smtp.bench.test', '--port', '587'],
    ],
  ];
  const bins = BASELINE ? [BASELINE, HERALD_BIN] : [HERALD_BIN];
  for (const [name, args] of commands) {
    const measured = await measure(bins, args, env);
    print(`  ${name.padEnd(30)} ${measured.map(describe).join('   ')}`);
  }
});

// The remote channels at saturation (npm run bench runs it after bench/run.ts): email to an SMTP sink
// (smtp-server in this process), web push to a push service (HTTPS, answers 201; Herald encrypts each
// payload per RFC 8291), APNs to an HTTP/2 peer that checks each request's ES256 token, and FCM to a
// peer with its OAuth token endpoint (the test peers of test/support/). The web push service and the
// FCM peer offer HTTP/2 and HTTP/1.1 over TLS, as the real services do. For each channel, with the
// workers stopped, triggers of 100 recipients (one event, hence one message, per recipient) leave a
// backlog; then one worker process drains it. Printed per channel: messages per second as the peer
// received them (after the first WARM_UP messages, and over the whole drain) and the CPU time per
// message of the worker process and of PostgreSQL over the same part, and the share of the machine's
// CPU time its hypervisor stole meanwhile.
//
// BENCH_CHANNEL_MESSAGES sets the backlog per channel (default 10,000); BENCH_CHANNELS a comma
// separated subset (email,web_push,apns,fcm). With BENCH_BASELINE_HERALD_BIN (another checkout's
// bin/herald, on the same schema), each channel is drained four times, by that version, this one, this
// one again and that one again, on backlogs of the same size, and the ratio of the two versions' means
// is printed: the way to compare versions on a shared machine, whose load moves absolute rates from
// one run to the next (and whose later drains in a run go faster than the first).
import { once } from 'node:events';
import { generateKeyPairSync, createECDH, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { startRuntime, stopRuntime } from '../server/app/runtime.ts';
import { execute } from '../server/base/db/sql.ts';
import { newId } from '../server/base/ids.ts';
import { CONFIG_FILE_NAME } from '../server/base/config.ts';
import { putPushTransport } from '../server/channels/push/push-transports.ts';
import { startApnsPeer } from '../test/support/apns-peer.ts';
import { startFcmPeer } from '../test/support/fcm-peer.ts';
import { testCertificate } from '../test/support/tls.ts';
import { trackConnections } from '../test/support/connections.ts';
import { KeepAliveConnection } from './keep-alive-client.ts';
import {
  backendsCpuBetween,
  benchInstall,
  benchTenant,
  cleanups,
  databaseBackendsCpu,
  fmt,
  fmtCpu,
  freePort,
  heraldEnv,
  machineTicks,
  type MachineTicks,
  print,
  processCpu,
  runBench,
  sleep,
  startHerald,
  stolenShare,
  type CpuPerItem,
} from './support.ts';

const MESSAGES = Number(process.env.BENCH_CHANNEL_MESSAGES ?? 10_000);
const CHANNELS = (process.env.BENCH_CHANNELS ?? 'email,web_push,apns,fcm').split(',').map((c) => c.trim());
const BASELINE_BIN = process.env.BENCH_BASELINE_HERALD_BIN;
const RECIPIENTS_PER_TRIGGER = 100;
const TRIGGER_CONCURRENCY = 8;
/** A fresh worker process compiles its hot paths and opens its connections over its first messages. */
const WARM_UP = Math.min(1000, Math.floor(MESSAGES / 5));
const DRAIN_TIMEOUT_MS = 180_000;

interface Scenario {
  channel: string;
  type: string;
  target: number;
  /** Messages the peer has received so far, with the time of each. */
  arrivals: number[];
}

async function main(): Promise<void> {
  const started = Date.now();
  const { dataDir, url, encryptionKeys, config } = await benchInstall('herald-bench-channels');
  const certificate = testCertificate(dataDir);

  const scenarios = new Map<string, Scenario>(
    [
      { channel: 'email', type: 'bench_email', target: 3000 },
      { channel: 'web_push', type: 'bench_web_push', target: 2000 },
      { channel: 'apns', type: 'bench_apns', target: 5000 },
      { channel: 'fcm', type: 'bench_fcm', target: 3000 },
    ].map((s) => [s.channel, { ...s, arrivals: [] }]),
  );
  const arrived = (channel: string) => scenarios.get(channel)!.arrivals.push(performance.now());

  // The peers.
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      stream.on('end', () => {
        arrived('email');
        callback();
      });
      stream.resume();
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => smtp.close(() => resolve())));
  // Push services offer HTTP/2 in their TLS handshake, and HTTP/1.1 to a client that asks for it.
  const pushService = createSecureServer(
    { cert: certificate.cert, key: certificate.key, allowHTTP1: true },
    (req, res) => {
      req.on('end', () => {
        arrived('web_push');
        res.writeHead(201, { location: `${req.url}/m/${randomBytes(6).toString('hex')}` });
        res.end();
      });
      req.resume();
    },
  );
  const pushConnections = trackConnections(pushService);
  await new Promise<void>((resolve) => pushService.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    pushConnections.destroyAll();
    pushService.close();
  });
  const pushServiceUrl = `https://localhost:${(pushService.address() as AddressInfo).port}`;
  const apnsKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  const apnsSettings = {
    team_id: 'TEAM123456',
    key_id: 'KEYID12345',
    bundle_id: 'test.herald.bench',
    environment: 'sandbox',
    private_key: apnsKey,
  };
  const apns = await startApnsPeer({
    privateKeyPem: apnsKey,
    teamId: apnsSettings.team_id,
    keyId: apnsSettings.key_id,
    bundleId: apnsSettings.bundle_id,
  });
  cleanups.push(() => apns.close());
  const fcmKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  const serviceAccount = {
    type: 'service_account',
    project_id: 'herald-bench',
    private_key_id: 'k1',
    private_key: fcmKey,
    client_email: 'bench@herald-bench.iam.gserviceaccount.com',
  };
  const fcm = await startFcmPeer({
    privateKeyPem: fcmKey,
    clientEmail: serviceAccount.client_email,
    projectId: serviceAccount.project_id,
    tls: true,
  });
  cleanups.push(() => fcm.close());
  // The test peers keep what they receive: their arrays' growth is the arrivals.
  const countInto = (channel: string, received: unknown[]) => {
    const push = received.push.bind(received);
    received.push = (...items: unknown[]) => {
      for (let i = 0; i < items.length; i++) arrived(channel);
      return push(...items);
    };
  };
  countInto('apns', apns.received);
  countInto('fcm', fcm.received);

  // Herald points at the peers (the configuration file of its data directory) and trusts their certificate.
  writeFileSync(
    join(dataDir, CONFIG_FILE_NAME),
    JSON.stringify({
      providers: {
        apnsSandboxUrl: apns.url,
        apnsProductionUrl: apns.url,
        fcmUrl: fcm.url,
        fcmTokenUrl: fcm.tokenUrl,
        caFile: certificate.caFile,
      },
    }),
  );

  // The tenant, its transports, one type per channel with its templates, and the contacts with their destinations.
  const setup = await startRuntime(config, { role: 'api', queue: true, poolMax: 4 });
  const em = setup.orm.em.fork();
  const { tenant, apiKey } = await benchTenant(em);
  await execute(
    em,
    `INSERT INTO email_transports (tenant_id, host, port, secure, from_email, from_name) VALUES ($1, '127.0.0.1', $2, false, 'bench@example.test', 'Bench')`,
    [tenant.id, (smtp.server.address() as AddressInfo).port],
  );
  await putPushTransport(setup, em, tenant.id, 'apns', apnsSettings);
  await putPushTransport(setup, em, tenant.id, 'fcm', { service_account: serviceAccount });
  await putPushTransport(setup, em, tenant.id, 'webpush', { subject: 'mailto:ops@example.test' });
  const channelOf: Record<string, string> = { email: 'email', web_push: 'web_push', apns: 'push', fcm: 'push' };
  for (const s of scenarios.values()) {
    await execute(
      em,
      `INSERT INTO notification_types (id, tenant_id, key, name, channel_defaults) VALUES ($1, $2, $3, $3, $4::jsonb)`,
      [newId(), tenant.id, s.type, JSON.stringify({ [channelOf[s.channel]!]: true })],
    );
    await execute(
      em,
      `INSERT INTO inbox_templates (id, tenant_id, notification_type_key, brand_key, language, title, content, action_url)
       VALUES ($1, $2, $3, 'default', 'en', 'Order {{ order }} shipped', 'Hello {{ contact.name }}, order {{ order }} is on its way', 'https://example.test/orders/{{ order }}')`,
      [newId(), tenant.id, s.type],
    );
  }
  await execute(
    em,
    `INSERT INTO email_templates (id, tenant_id, notification_type_key, brand_key, language, subject, content)
     VALUES ($1, $2, 'bench_email', 'default', 'en', 'Order {{ order }} shipped', '<p>Hello {{ contact.name }}, order <b>{{ order }}</b> is on its way.</p>')`,
    [newId(), tenant.id],
  );
  await execute(
    em,
    `INSERT INTO contacts (id, tenant_id, external_id, name, email)
     SELECT gen_random_uuid(), $1, c.channel || '_' || i, 'Reader ' || i, c.channel || i || '@example.test'
       FROM unnest($2::text[]) AS c(channel), generate_series(0, $3 - 1) AS i`,
    [tenant.id, [...scenarios.keys()], MESSAGES],
  );
  // One browser key pair for every web push subscription: the encryption is per message all the same.
  const browser = createECDH('prime256v1');
  browser.generateKeys();
  const keys = { p256dh: browser.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
  await execute(
    em,
    `INSERT INTO push_subscriptions (id, tenant_id, contact_id, provider, token, endpoint, keys, destination_hash)
     SELECT gen_random_uuid(), tenant_id, id, p.provider,
            CASE p.provider WHEN 'apns' THEN md5(id::text) || md5(external_id) WHEN 'fcm' THEN 'fcm-' || external_id END,
            CASE WHEN p.provider = 'webpush' THEN $2 || '/push/' || external_id END,
            CASE WHEN p.provider = 'webpush' THEN $3::jsonb END,
            md5(p.provider || id::text)
       FROM contacts JOIN (VALUES ('apns', 'apns_'), ('fcm', 'fcm_'), ('webpush', 'web_push_')) AS p(provider, prefix)
         ON starts_with(external_id, p.prefix)
      WHERE tenant_id = $1`,
    [tenant.id, pushServiceUrl, JSON.stringify(keys)],
  );
  await stopRuntime(setup);

  const port = await freePort();
  const env = heraldEnv({ dataDir, url, encryptionKeys }, port, {
    HERALD_ALLOW_PRIVATE_SMTP_HOSTS: 'true',
    HERALD_ALLOW_PRIVATE_PUSH_ENDPOINTS: 'true',
  });
  const apiProcess = await startHerald(['--role', 'api'], env, 'Herald listening');
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  cleanups.push(() => db.end());

  /** Leaves a backlog of MESSAGES events of the scenario's type (the workers are stopped meanwhile). */
  const fillBacklog = async (s: Scenario) => {
    // Connections of its own: the server closes the ones left idle through the last drain.
    const connections = await Promise.all(
      Array.from({ length: TRIGGER_CONCURRENCY }, () => KeepAliveConnection.open(port)),
    );
    cleanups.push(async () => connections.forEach((c) => c.close()));
    let next = 0;
    await Promise.all(
      connections.map(async (connection) => {
        while (next < MESSAGES / RECIPIENTS_PER_TRIGGER) {
          const first = next++ * RECIPIENTS_PER_TRIGGER;
          const recipients = Array.from({ length: RECIPIENTS_PER_TRIGGER }, (_, j) => `${s.channel}_${first + j}`);
          const res = await connection.request(
            'POST',
            '/v1/notifications',
            headers,
            JSON.stringify({ type: s.type, recipients, variables: { order: `A-${first}` } }),
          );
          if (res.status !== 202) throw new Error(`trigger answered ${res.status}: ${res.body}`);
        }
      }),
    );
    connections.forEach((c) => c.close());
  };

  const unfinishedOf = async (s: Scenario) =>
    Number(
      (
        await db.query(`SELECT count(*) AS n FROM events WHERE type_key = $1 AND status IN ('queued', 'processing')`, [
          s.type,
        ])
      ).rows[0].n,
    );

  /** One worker process drains the backlog; the rate is the peer's, the CPU the worker's and PostgreSQL's. */
  const drain = async (s: Scenario, bin: string | undefined) => {
    s.arrivals.length = 0;
    await fillBacklog(s);
    await db.query('ANALYZE');
    const worker = await startHerald(['--role', 'worker'], env, null, bin);
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    let warm: { worker: number; database: Map<number, number>; machine: MachineTicks | null } | null = null;
    while (s.arrivals.length < MESSAGES && Date.now() < deadline && worker.exitCode === null) {
      if (!warm && s.arrivals.length >= WARM_UP)
        warm = { worker: processCpu(worker.pid!), database: await databaseBackendsCpu(db), machine: machineTicks() };
      await sleep(20);
    }
    const end = { worker: processCpu(worker.pid!), database: await databaseBackendsCpu(db), machine: machineTicks() };
    // The last outcomes are recorded just after the peer has them.
    for (let i = 0; i < 100 && (await unfinishedOf(s)) > 0; i++) await sleep(50);
    const received = s.arrivals.length;
    // Whatever did not reach the peer: the events' statuses say why.
    const unfinished = await unfinishedOf(s);
    const failed = Number(
      (
        await db.query(
          `SELECT count(*) AS n FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.type_key = $1 AND d.status = 'failed'`,
          [s.type],
        )
      ).rows[0].n,
    );
    worker.kill('SIGTERM');
    await once(worker, 'exit');
    // Anything the stopped worker left (a timeout) is not counted in the next drain.
    await db.query(`UPDATE events SET status = 'canceled' WHERE type_key = $1 AND status IN ('queued', 'processing')`, [
      s.type,
    ]);
    const t = s.arrivals;
    const whole = received > 1 ? (received - 1) / ((t[received - 1]! - t[0]!) / 1000) : 0;
    const steady =
      received > WARM_UP + 1 ? (received - 1 - WARM_UP) / ((t[received - 1]! - t[WARM_UP]!) / 1000) : whole;
    const measured = received - WARM_UP;
    const cpu: CpuPerItem | null =
      warm && measured > 0
        ? {
            consumer: ((end.worker - warm.worker) / measured) * 1e6,
            database: (backendsCpuBetween(warm.database, end.database) / measured) * 1e6,
            stolen: stolenShare(warm.machine, end.machine),
          }
        : null;
    return { received, unfinished, failed, whole, steady, cpu };
  };

  const line = (label: string, s: Scenario, r: Awaited<ReturnType<typeof drain>>) =>
    `${label}${fmt(r.steady)} messages/s after the first ${WARM_UP} (whole drain ${fmt(r.whole)})   (${r.received} of ${MESSAGES} received, ${r.failed} failed, ${r.unfinished} not final; target >= ${s.target}/s)\n` +
    `   per message after the first ${WARM_UP}: ${fmtCpu(r.cpu, 'the worker')} (PostgreSQL: the backends of the benchmark's database)`;

  print(
    `Herald channels at saturation (loopback peers, one worker process, ${config.workerConcurrency} worker concurrency, ${MESSAGES} messages per channel in triggers of ${RECIPIENTS_PER_TRIGGER})`,
  );
  const names: Record<string, string> = {
    email: 'email (SMTP sink)',
    web_push: 'web push (RFC 8291, HTTPS 201)',
    apns: 'APNs (HTTP/2)',
    fcm: 'FCM (OAuth + HTTPS)',
  };
  let n = 8;
  for (const channel of CHANNELS) {
    const s = scenarios.get(channel);
    if (!s) throw new Error(`unknown channel ${channel} in BENCH_CHANNELS`);
    const label = `${n++}. ${names[channel]}: `;
    if (BASELINE_BIN) {
      // In the order baseline, this, this, baseline: a run's later drains go faster than its first
      // (whichever version drains), and this order gives each version the same positions.
      const pad = ' '.repeat(label.length);
      const drains: Array<{ version: 'baseline' | 'this'; result: Awaited<ReturnType<typeof drain>> }> = [];
      for (const version of ['baseline', 'this', 'this', 'baseline'] as const) {
        const result = await drain(s, version === 'baseline' ? BASELINE_BIN : undefined);
        print(line(`${drains.length === 0 ? label : pad}[${version}]${version === 'this' ? '     ' : ' '}`, s, result));
        drains.push({ version, result });
      }
      const cpu = (r: (typeof drains)[number]['result']) => (r.cpu ? r.cpu.consumer + r.cpu.database : NaN);
      const mean = (version: 'baseline' | 'this', of: (r: (typeof drains)[number]['result']) => number) =>
        drains.filter((d) => d.version === version).reduce((sum, d) => sum + of(d.result), 0) / 2;
      const rate = (r: (typeof drains)[number]['result']) => r.steady;
      print(
        `   this / baseline (means of two drains each): rate ${(mean('this', rate) / mean('baseline', rate)).toFixed(2)}, CPU per message ${(mean('this', cpu) / mean('baseline', cpu)).toFixed(2)}`,
      );
    } else {
      print(line(label, s, await drain(s, undefined)));
    }
  }
  print(`done in ${Math.round((Date.now() - started) / 1000)} s`);
  apiProcess.kill('SIGTERM');
  await once(apiProcess, 'exit');
}

await runBench(main);

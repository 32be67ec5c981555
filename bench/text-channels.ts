// The text channels at saturation, and failover under a kill (npm run bench runs it after
// bench/channels.ts). SMS goes to the Twilio-shaped peer, chat to the Slack-shaped peer's incoming
// webhooks (the test peers of test/support/provider-peers/, in this process). For each: with the
// workers stopped, triggers of 100 recipients leave a backlog; one worker process drains it; then the
// bare library limit, the same requests prebuilt and sent by bench/bare-http-client.ts (a process of
// its own) with as many in flight as the worker sends at once, to the same peer. Printed: messages/s
// and CPU per message of each, and Herald's ratio to the bare client (target >= 0.8).
//
// Failover: email through a primary SMTP sink with a fallback sink, SMS through Twilio with Vonage as
// the fallback. While one worker drains a backlog of both, the primary relay and Twilio are killed
// (the relay closes, Twilio refuses connections); printed: the time from the kill to the first message
// through each fallback (target <= 2 s), and that every message arrived (none lost).
//
// BENCH_TEXT_MESSAGES sets the backlog per scenario (default 5,000).
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { startRuntime, stopRuntime } from '../server/app/runtime.ts';
import { CONFIG_FILE_NAME } from '../server/base/config.ts';
import { startSlackPeer, startTwilioPeer, startVonagePeer } from '../test/support/provider-peers/index.ts';
import { KeepAliveConnection } from './keep-alive-client.ts';
import {
  benchInstall,
  benchTenant,
  cleanups,
  fmt,
  freePort,
  heraldEnv,
  print,
  processCpu,
  runBench,
  sleep,
  startHerald,
} from './support.ts';

const MESSAGES = Number(process.env.BENCH_TEXT_MESSAGES ?? 5_000);
const RECIPIENTS_PER_TRIGGER = 100;
const TRIGGER_CONCURRENCY = 8;
const WARM_UP = Math.min(500, Math.floor(MESSAGES / 5));
const DRAIN_TIMEOUT_MS = 180_000;
/** When the failover scenario kills the primaries: after this share of its messages arrived. */
const KILL_AT = 0.3;

/** A phone number libphonenumber takes as a valid German mobile number, one per index. */
const phoneOf = (i: number) => `+49151${String(10_000_000 + i).slice(-8)}`;
/** Each scenario's contacts have numbers of their own, so that a peer's arrivals tell scenarios apart. */
const PHONE_OFFSET: Record<string, number> = { sms: 0, chat: 1_000_000, failover: 2_000_000 };

async function main(): Promise<void> {
  const started = Date.now();
  const { dataDir, url, encryptionKeys, config } = await benchInstall('herald-bench-text');

  // The peers: every message they accept is an arrival, with its time.
  const twilio = await startTwilioPeer();
  const vonage = await startVonagePeer();
  const slack = await startSlackPeer();
  cleanups.push(
    () => twilio.close(),
    () => vonage.close(),
    () => slack.close(),
  );
  const arrivals: Record<string, number[]> = { twilio: [], vonage: [], slack: [], primary: [], fallback: [] };
  const countInto = (name: string, received: unknown[]) => {
    const push = received.push.bind(received);
    received.push = (...items: unknown[]) => {
      for (let i = 0; i < items.length; i++) arrivals[name]!.push(performance.now());
      return push(...items);
    };
  };
  countInto('twilio', twilio.received);
  countInto('vonage', vonage.received);
  countInto('slack', slack.received);
  const primary = await smtpSink(() => arrivals.primary!.push(performance.now()));
  const fallback = await smtpSink(() => arrivals.fallback!.push(performance.now()));
  cleanups.push(
    () => primary.close(),
    () => fallback.close(),
  );

  writeFileSync(
    join(dataDir, CONFIG_FILE_NAME),
    JSON.stringify({ providers: { twilioUrl: twilio.url, vonageUrl: vonage.url, slackUrl: slack.url } }),
  );
  const setup = await startRuntime(config, { role: 'api', queue: true, poolMax: 4 });
  const { apiKey } = await benchTenant(setup.orm.em.fork());
  await stopRuntime(setup);

  const port = await freePort();
  const env = heraldEnv({ dataDir, url, encryptionKeys }, port, {
    HERALD_ALLOW_PRIVATE_SMTP_HOSTS: 'true',
    HERALD_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
  });
  const apiProcess = await startHerald(['--role', 'api'], env, 'Herald listening');
  const api = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    // Setup goes as fast as the tenant's rate limits let it (contact writes are limited).
    if (res.status === 429) {
      await sleep(Number(res.headers.get('retry-after') ?? 1) * 1000);
      return api<T>(method, path, body);
    }
    if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
    return (text ? JSON.parse(text) : null) as T;
  };
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  cleanups.push(() => db.end());

  // The transports, one type per scenario with its inbox template (the text channels' fallback), the contacts.
  await api('PUT', '/v1/sms-transport/twilio', {
    account_sid: twilio.accountSid,
    auth_token: twilio.authToken,
    from: '+15005550006',
    priority: 1,
  });
  const scenarios = [
    { type: 'bench_sms', channels: { sms: true }, prefix: 'sms' },
    { type: 'bench_chat', channels: { chat: true }, prefix: 'chat' },
    { type: 'bench_failover', channels: { email: true, sms: true }, prefix: 'failover' },
  ];
  for (const s of scenarios) {
    await api('POST', '/v1/notification-types', {
      key: s.type,
      channel_defaults: { inbox: false, email: false, ...s.channels },
    });
    await api('POST', '/v1/inbox-templates', {
      notification_type_key: s.type,
      title: 'Deploy {{ version }}',
      content: 'Hello {{ contact.name }}, version {{ version }} is live',
    });
    await api('POST', '/v1/email-templates', {
      notification_type_key: s.type,
      subject: 'Deploy {{ version }}',
      content: '<p>Hello {{ contact.name }}, version <b>{{ version }}</b> is live.</p>',
    });
    for (let first = 0; first < MESSAGES; first += 500) {
      const contacts = Array.from({ length: Math.min(500, MESSAGES - first) }, (_, j) => ({
        external_id: `${s.prefix}_${first + j}`,
        name: `Reader ${first + j}`,
        email: `${s.prefix}${first + j}@example.test`,
        phone: phoneOf(PHONE_OFFSET[s.prefix]! + first + j),
      }));
      await api('POST', '/v1/contacts/bulk', { contacts });
    }
  }
  // A Slack incoming webhook per chat contact.
  const chatContacts = await db.query<{ id: string }>(`SELECT id FROM contacts WHERE external_id LIKE 'chat\\_%'`);
  let nextContact = 0;
  await Promise.all(
    Array.from({ length: TRIGGER_CONCURRENCY }, async () => {
      while (nextContact < chatContacts.rows.length) {
        const { id } = chatContacts.rows[nextContact++]!;
        await api('POST', `/v1/contacts/${id}/chat-destinations`, {
          provider: 'slack',
          webhook_url: slack.webhookUrl(),
        });
      }
    }),
  );

  const fillBacklog = async (type: string, prefix: string) => {
    const connections = await Promise.all(
      Array.from({ length: TRIGGER_CONCURRENCY }, () => KeepAliveConnection.open(port)),
    );
    let next = 0;
    await Promise.all(
      connections.map(async (connection) => {
        while (next < MESSAGES / RECIPIENTS_PER_TRIGGER) {
          const first = next++ * RECIPIENTS_PER_TRIGGER;
          const recipients = Array.from({ length: RECIPIENTS_PER_TRIGGER }, (_, j) => `${prefix}_${first + j}`);
          const res = await connection.request(
            'POST',
            '/v1/notifications',
            { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
            JSON.stringify({ type, recipients, variables: { version: `1.${first}` } }),
          );
          if (res.status !== 202) throw new Error(`trigger answered ${res.status}: ${res.body}`);
        }
      }),
    );
    connections.forEach((c) => c.close());
  };

  const unfinished = async (type: string) =>
    Number(
      (
        await db.query(`SELECT count(*) AS n FROM events WHERE type_key = $1 AND status IN ('queued', 'processing')`, [
          type,
        ])
      ).rows[0].n,
    );

  /** One worker drains the type's backlog; the rate is the peer's, the CPU the worker's. */
  const drain = async (type: string, prefix: string, peer: string, messages: number) => {
    arrivals[peer]!.length = 0;
    await fillBacklog(type, prefix);
    await db.query('ANALYZE');
    const worker = await startHerald(['--role', 'worker'], env, null);
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    let warmCpu: number | null = null;
    const t = arrivals[peer]!;
    while (t.length < messages && Date.now() < deadline && worker.exitCode === null) {
      if (warmCpu === null && t.length >= WARM_UP) warmCpu = processCpu(worker.pid!);
      await sleep(20);
    }
    const endCpu = processCpu(worker.pid!);
    for (let i = 0; i < 100 && (await unfinished(type)) > 0; i++) await sleep(50);
    worker.kill('SIGTERM');
    await once(worker, 'exit');
    const received = t.length;
    const rate = received > WARM_UP + 1 ? (received - 1 - WARM_UP) / ((t[received - 1]! - t[WARM_UP]!) / 1000) : 0;
    const cpuPerMessage = warmCpu === null ? NaN : ((endCpu - warmCpu) / Math.max(1, received - WARM_UP)) * 1e6;
    return { received, rate, cpuPerMessage };
  };

  /** The bare client: the worker's requests, prebuilt, with the worker's concurrency in flight. */
  const bare = async (
    requests: Array<{ url: string; method: string; headers: Record<string, string>; body: string }>,
  ) => {
    const file = join(dataDir, `bare-${Date.now()}.json`);
    writeFileSync(file, JSON.stringify(requests));
    const child = spawn(
      process.execPath,
      [
        new URL('./bare-http-client.ts', import.meta.url).pathname,
        file,
        String(MESSAGES),
        String(config.workerConcurrency),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    await once(child, 'exit');
    const result = JSON.parse(out) as { messages: number; failed: number; seconds: number; cpu_seconds: number };
    return {
      rate: result.messages / result.seconds,
      cpuPerMessage: (result.cpu_seconds / result.messages) * 1e6,
      failed: result.failed,
    };
  };

  print(
    `Herald text channels at saturation (loopback peers, one worker process, ${config.workerConcurrency} worker concurrency, ${MESSAGES} messages each)`,
  );
  const basic = `Basic ${Buffer.from(`${twilio.accountSid}:${twilio.authToken}`).toString('base64')}`;
  const smsRequests = Array.from({ length: 100 }, (_, i) => ({
    url: `${twilio.url}/2010-04-01/Accounts/${twilio.accountSid}/Messages.json`,
    method: 'POST',
    headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      To: phoneOf(i),
      From: '+15005550006',
      Body: `Deploy 1.${i}\nHello Reader ${i}, version 1.${i} is live`,
    }).toString(),
  }));
  const hooks = [...slack.hooks].slice(0, 100);
  const chatRequests = hooks.map((path, i) => ({
    url: `${slack.url}${path}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: `*Deploy 1.${i}*\nHello Reader ${i}, version 1.${i} is live` }),
  }));
  for (const [n, label, type, prefix, peer, requests] of [
    [12, 'SMS (Twilio REST, form body, basic auth)', 'bench_sms', 'sms', 'twilio', smsRequests],
    [13, 'chat (Slack incoming webhooks)', 'bench_chat', 'chat', 'slack', chatRequests],
  ] as const) {
    const herald = await drain(type, prefix, peer, MESSAGES);
    arrivals[peer]!.length = 0;
    const limit = await bare([...requests]);
    print(
      `${n}. ${label}: Herald ${fmt(herald.rate)} messages/s after the first ${WARM_UP} (${herald.received} of ${MESSAGES} received), ${fmt(herald.cpuPerMessage)} µs worker CPU per message\n` +
        `    bare client ${fmt(limit.rate)} messages/s, ${fmt(limit.cpuPerMessage)} µs CPU per message (${limit.failed} refused)\n` +
        `    Herald / bare: rate ${(herald.rate / limit.rate).toFixed(2)} (target >= 0.8), CPU per message ${(herald.cpuPerMessage / limit.cpuPerMessage).toFixed(2)}`,
    );
  }

  // Failover: primaries killed a third of the way through.
  await api('PUT', '/v1/email-transport', {
    host: '127.0.0.1',
    port: primary.port,
    secure: false,
    from_email: 'bench@example.test',
  });
  await api('PUT', '/v1/email-transport/fallback', {
    host: '127.0.0.1',
    port: fallback.port,
    secure: false,
    from_email: 'bench@example.test',
  });
  await api('PUT', '/v1/sms-transport/vonage', {
    api_key: vonage.apiKey,
    api_secret: vonage.apiSecret,
    from: 'Bench',
    priority: 2,
  });
  for (const name of Object.keys(arrivals)) arrivals[name]!.length = 0;
  await fillBacklog('bench_failover', 'failover');
  const worker = await startHerald(['--role', 'worker'], env, null);
  const deadline = Date.now() + DRAIN_TIMEOUT_MS;
  let killedAt: number | null = null;
  const total = () =>
    arrivals.primary!.length + arrivals.fallback!.length + arrivals.twilio!.length + arrivals.vonage!.length;
  while (Date.now() < deadline && worker.exitCode === null && (await unfinished('bench_failover')) > 0) {
    if (killedAt === null && total() >= KILL_AT * 2 * MESSAGES) {
      killedAt = performance.now();
      primary.kill();
      await twilio.down();
    }
    await sleep(20);
  }
  worker.kill('SIGTERM');
  await once(worker, 'exit');
  const firstAfter = (times: number[]) => {
    const t = times.find((at) => killedAt !== null && at >= killedAt);
    return t === undefined || killedAt === null ? 'none' : `${((t - killedAt) / 1000).toFixed(2)} s`;
  };
  const outcome = await db.query<{ channel: string; status: string; n: string }>(
    `SELECT d.channel, d.status, count(*) AS n FROM deliveries d JOIN events e ON e.id = d.event_id
      WHERE e.type_key = 'bench_failover' GROUP BY 1, 2 ORDER BY 1, 2`,
  );
  const failoverNumbers = new Set(Array.from({ length: MESSAGES }, (_, i) => phoneOf(PHONE_OFFSET.failover! + i)));
  const uniqueSms = new Set(
    [...twilio.received, ...vonage.received]
      .map((m) => (m.to.startsWith('+') ? m.to : `+${m.to}`))
      .filter((to) => failoverNumbers.has(to)),
  ).size;
  print(
    `14. failover (primary SMTP relay and Twilio killed after ${Math.round(KILL_AT * 100)}% of ${2 * MESSAGES} messages): first message through the fallback relay ${firstAfter(arrivals.fallback!)} after the kill, through Vonage ${firstAfter(arrivals.vonage!)} (target <= 2 s)\n` +
      `    email: ${arrivals.primary!.length} through the primary, ${arrivals.fallback!.length} through the fallback; SMS: ${arrivals.twilio!.length} through Twilio, ${arrivals.vonage!.length} through Vonage (${uniqueSms} distinct numbers of ${MESSAGES})\n` +
      `    deliveries: ${outcome.rows.map((r) => `${r.channel} ${r.status} ${r.n}`).join(', ')}; lost: ${2 * MESSAGES - outcome.rows.filter((r) => r.status === 'sent').reduce((n, r) => n + Number(r.n), 0)}`,
  );
  print(`done in ${Math.round((Date.now() - started) / 1000)} s`);
  apiProcess.kill('SIGTERM');
  await once(apiProcess, 'exit');
}

/** An SMTP sink on loopback; kill() closes it and drops the connections it holds, as a relay that dies. */
async function smtpSink(onMessage: () => void): Promise<{ port: number; kill(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onConnect(session, callback) {
      callback();
    },
    onData(stream, _session, callback) {
      stream.on('end', () => {
        onMessage();
        callback();
      });
      stream.resume();
    },
  });
  server.server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  let closed = false;
  const kill = () => {
    if (closed) return;
    closed = true;
    server.server.close();
    for (const socket of sockets) socket.destroy();
  };
  return {
    port,
    kill,
    close: () => (closed ? Promise.resolve() : new Promise<void>((resolve) => server.close(() => resolve()))),
  };
}

await runBench(main);

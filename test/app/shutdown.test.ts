// Shutdown as an operator sees it, on `herald start` subprocesses with the embedded PostgreSQL: SIGTERM
// drains and exits within shutdownTimeoutMs in every state (under load after the supervisor restarted a
// killed postmaster, and while it is restarting it), exit 1 when the drain had to be forced (a step held
// past the deadline, or a second signal), and never a postgres process of the data directory left behind.
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../support/cli.ts';
import { eventually } from '../support/eventually.ts';
import {
  isAlive,
  postgresProcessesFor,
  postmasterPid,
  startHerald,
  type HeraldProcess,
} from '../support/herald-process.ts';
import { startSmtpPeer } from '../support/smtp-peer.ts';
import { freePort } from '../../server/base/db/embedded-postgres.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const ENV = {
  DATABASE_URL: undefined,
  HERALD_DATABASE_URL: undefined,
  HERALD_EMBEDDED_POSTGRES_PORT: undefined,
  HERALD_HOME: undefined,
  HERALD_LOG_LEVEL: 'info',
  HERALD_ALLOW_PRIVATE_SMTP_HOSTS: 'true',
};

/** An initialised data directory (embedded PostgreSQL, single tenant) and a service key of its tenant. */
async function install(): Promise<{ dataDir: string; key: string }> {
  const base = mkdtempSync(join(tmpdir(), 'herald-shutdown-'));
  chmodSync(base, 0o711); // the embedded cluster runs as 'postgres' when tests run as root
  cleanups.push(() => rmSync(base, { recursive: true, force: true }));
  const dataDir = join(base, 'data');
  // After a failed run, a postmaster the killed Herald left behind is stopped (fast shutdown) before its directory goes.
  cleanups.push(() => {
    const pid = postmasterPid(clusterDir(dataDir));
    if (pid && isAlive(pid)) process.kill(pid, 'SIGINT');
  });
  const init = await runCli(
    ['init', '--yes', '--data-dir', dataDir, '--tenant', 'Acme', '--owner-email', 'owner@acme.test'].concat([
      '--port',
      String(await freePort()),
      '--json',
    ]),
    { env: ENV },
  );
  expect(init.code, init.stderr).toBe(0);
  const issued = await runCli(['api-keys', 'issue', '--data-dir', dataDir, '--json'], { env: ENV });
  expect(issued.code, issued.stderr).toBe(0);
  return { dataDir, key: JSON.parse(issued.stdout).key as string };
}

async function start(dataDir: string, env: Record<string, string> = {}): Promise<HeraldProcess> {
  const herald = await startHerald(['--data-dir', dataDir], { ...ENV, ...env });
  cleanups.push(() => herald.stop('SIGKILL'));
  return herald;
}

type Api = (method: string, path: string, body?: unknown) => Promise<Record<string, unknown>>;

function apiOf(herald: HeraldProcess, key: string): Api {
  return async (method, path, body) => {
    const res = await fetch(herald.url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 400) throw new Error(`${method} ${path} -> ${res.status} ${text}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };
}

/** Email (to an SMTP server on `port`) and inbox for every trigger of 'receipt'; contacts c0..c9. */
async function setUpDelivery(api: Api, smtpPort: number): Promise<string[]> {
  await api('PUT', '/v1/email-transport', {
    host: '127.0.0.1',
    port: smtpPort,
    secure: false,
    from_email: 'robot@acme.test',
    from_name: 'Acme',
  });
  await api('POST', '/v1/notification-types', {
    key: 'receipt',
    name: 'Receipt',
    channel_defaults: { inbox: true, email: true, push: false, web_push: false },
    opt_out: true,
    variables: [],
  });
  await api('POST', '/v1/email-templates', {
    notification_type_key: 'receipt',
    subject: 'Your receipt',
    content: '<p>Thanks</p>',
  });
  const contacts = Array.from({ length: 10 }, (_, i) => `c${i}`);
  for (const id of contacts) await api('POST', '/v1/contacts', { external_id: id, email: `${id}@example.test` });
  return contacts;
}

/** Load until stopped: triggers on keep-alive connections, and open real-time streams of two contacts. */
async function startLoad(herald: HeraldProcess, key: string, api: Api, contacts: string[]) {
  const aborts: AbortController[] = [];
  const streams: Array<Promise<void>> = [];
  for (const externalId of contacts.slice(0, 2)) {
    const minted = await api('POST', '/v1/contacts/tokens', { external_id: externalId });
    const abort = new AbortController();
    aborts.push(abort);
    const res = await fetch(`${herald.url}/v1/contacts/${String(minted.contact_id)}/stream`, {
      headers: { authorization: `Bearer ${String(minted.token)}` },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    streams.push(
      (async () => {
        for await (const _ of res.body!);
      })().catch(() => undefined),
    );
  }
  let running = true;
  const accepted = { count: 0 };
  const triggers = Array.from({ length: 6 }, async () => {
    while (running) {
      try {
        const res = await fetch(`${herald.url}/v1/notifications`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'receipt', recipients: contacts.slice(0, 4) }),
        });
        await res.text();
        if (res.status === 202) accepted.count++;
      } catch {
        // refused while Herald stops: the load goes on until the test ends it
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  });
  return {
    accepted,
    async stop() {
      running = false;
      for (const abort of aborts) abort.abort();
      await Promise.all([...triggers, ...streams]);
    },
  };
}

/** An SMTP server that greets and then never answers: a delivery to it holds its worker for 30 s. */
async function stallingSmtp(): Promise<{ port: number; connections: () => number }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.write('220 stall.test ESMTP\r\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return { port: (server.address() as { port: number }).port, connections: () => connections };
}

/**
 * Sends SIGTERM; resolves with the exit code (null: ended by a signal) and the milliseconds from the signal to
 * the exit, or with 'still running' when it has not exited `waitMs` after the signal.
 */
async function terminate(
  herald: HeraldProcess,
  waitMs: number,
): Promise<{ code: number | null | 'still running'; ms: number }> {
  const sent = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    herald.stop('SIGTERM'),
    new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), waitMs))),
  ]);
  clearTimeout(timer);
  return { code, ms: Date.now() - sent };
}

const clusterDir = (dataDir: string) => join(dataDir, 'postgres');

async function killPostmaster(dataDir: string): Promise<number> {
  const pid = postmasterPid(clusterDir(dataDir))!;
  expect(isAlive(pid)).toBe(true);
  process.kill(pid, 'SIGKILL');
  return pid;
}

/** Nothing of the data directory's cluster runs (the postmaster and its backends). */
async function noPostgresLeft(dataDir: string): Promise<void> {
  await eventually(() => postgresProcessesFor(dataDir).length === 0, {
    timeoutMs: 10_000,
    message: `postgres processes left: ${postgresProcessesFor(dataDir).join('\n')}`,
  });
}

/** Herald delivering email (to a real SMTP peer) and inbox under load, with open streams, once `mails` have arrived. */
async function loadedHerald(deadlineMs: number, mails: number) {
  const { dataDir, key } = await install();
  const smtp = await startSmtpPeer();
  cleanups.push(() => smtp.close());
  const herald = await start(dataDir, { HERALD_SHUTDOWN_TIMEOUT_MS: String(deadlineMs) });
  const api = apiOf(herald, key);
  const contacts = await setUpDelivery(api, smtp.port);
  const load = await startLoad(herald, key, api, contacts);
  cleanups.push(() => load.stop());
  await eventually(() => smtp.messages.length >= mails, { timeoutMs: 60_000 });
  return { dataDir, herald, smtp, load };
}

/** Herald whose one delivery waits for a relay's answer to EHLO, which never comes. */
async function heldHerald(deadlineMs: number) {
  const { dataDir, key } = await install();
  const smtp = await stallingSmtp();
  const herald = await start(dataDir, { HERALD_SHUTDOWN_TIMEOUT_MS: String(deadlineMs) });
  const api = apiOf(herald, key);
  await setUpDelivery(api, smtp.port);
  await api('POST', '/v1/notifications', { type: 'receipt', recipients: ['c0'] });
  await eventually(() => smtp.connections() >= 1, { timeoutMs: 30_000 });
  return { dataDir, herald };
}

describe('SIGTERM', { timeout: 240_000 }, () => {
  it('under load, after the supervisor restarted a killed postmaster: drains, exits 0 promptly, no postgres left', async () => {
    const deadlineMs = 30_000;
    const { dataDir, herald, smtp, load } = await loadedHerald(deadlineMs, 40);
    const before = await killPostmaster(dataDir);
    await eventually(
      () => {
        const pid = postmasterPid(clusterDir(dataDir));
        return pid !== null && pid !== before && isAlive(pid);
      },
      { timeoutMs: 30_000 },
    );
    await eventually(async () => (await fetch(`${herald.url}/readyz`)).status === 200, { timeoutMs: 30_000 });
    // Herald works on after the restart: triggers are accepted and delivered again.
    const acceptedBefore = load.accepted.count;
    const mailsBefore = smtp.messages.length;
    await eventually(() => load.accepted.count > acceptedBefore + 10 && smtp.messages.length > mailsBefore + 10, {
      timeoutMs: 30_000,
    });

    const { code, ms } = await terminate(herald, deadlineMs + 10_000);
    console.log(`SIGTERM after a postmaster restart under load: exit ${code} after ${ms} ms`);
    expect(code, herald.output().slice(-4000)).toBe(0);
    // Promptly, not merely within the deadline: in-flight work takes milliseconds, while keep-alive
    // clients holding their connections would hold the HTTP close for its whole 10 s grace.
    expect(ms).toBeLessThan(8000);
    expect(herald.output()).toMatch(/"msg":"herald stopped"/);
    await load.stop();
    await noPostgresLeft(dataDir);
  });

  it('under load while the supervisor is restarting a killed postmaster: drains, exits 0, no postgres left', async () => {
    const deadlineMs = 15_000;
    const { dataDir, herald, load } = await loadedHerald(deadlineMs, 20);
    await killPostmaster(dataDir);
    await eventually(() => /restarting it/.test(herald.output()), { timeoutMs: 10_000, intervalMs: 5 });
    const { code, ms } = await terminate(herald, deadlineMs + 10_000);
    console.log(`SIGTERM while the postmaster restarts: exit ${code} after ${ms} ms`);
    expect(code, herald.output().slice(-4000)).toBe(0);
    expect(ms).toBeLessThan(deadlineMs);
    await load.stop();
    await noPostgresLeft(dataDir);
  });

  it('a drain held past a short deadline is forced: exit 1 within the deadline, saying what had not finished', async () => {
    const deadlineMs = 4000;
    const { dataDir, herald } = await heldHerald(deadlineMs);
    const { code, ms } = await terminate(herald, deadlineMs + 10_000);
    console.log(`SIGTERM with a delivery held past a ${deadlineMs} ms deadline: exit ${code} after ${ms} ms`);
    expect(code, herald.output().slice(-4000)).toBe(1);
    // The deadline, and the moment the process takes to exit.
    expect(ms).toBeLessThan(deadlineMs + 1000);
    expect(herald.output()).toMatch(/"msg":"shutdown forced: the drain left work unfinished".*"unfinished":\["queue/);
    await noPostgresLeft(dataDir);
  });

  it('a second SIGTERM during the drain forces the exit at once: exit 1, no postgres left', async () => {
    const { dataDir, herald } = await heldHerald(60_000);
    herald.child.kill('SIGTERM');
    await eventually(() => /"msg":"draining"/.test(herald.output()), { timeoutMs: 10_000, intervalMs: 10 });
    const { code, ms } = await terminate(herald, 10_000);
    console.log(`a second SIGTERM during the drain: exit ${code} after ${ms} ms`);
    expect(code, herald.output().slice(-4000)).toBe(1);
    expect(ms).toBeLessThan(2000);
    expect(herald.output()).toMatch(/"msg":"shutdown forced: a second signal"/);
    await noPostgresLeft(dataDir);
  });
});

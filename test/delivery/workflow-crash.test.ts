// A worker process killed (SIGKILL) in the middle of workflows: inbox step, a delay, an email step. A
// second worker resumes every workflow where it stopped: no step runs twice, no inbox item or email
// is duplicated, none is lost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERALD_BIN } from '../support/cli.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  activeJobs,
  createTenantFixture,
  sql,
  sqlOne,
  untilHandedBack,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';
import { eventually } from '../support/eventually.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';

let app: TestApp;
let smtp: SmtpPeer;
let acme: TenantFixture;
const children: ChildProcess[] = [];
let home: string;
// A killed worker's jobs come back after this long without a heartbeat (5 s in production).
const LOST_WORKER_SECONDS = 3;

async function api(method: string, path: string, body?: unknown) {
  const res = await app.request(method, path, { token: acme.serviceKey, body });
  if (res.status >= 400) throw new Error(`${method} ${path} -> ${res.status} ${res.text}`);
  return res.body;
}

function startWorker(): ChildProcess {
  const child = spawn(HERALD_BIN, ['start', '--role', 'worker'], {
    env: {
      ...process.env,
      DATABASE_URL: app.database.url,
      HERALD_HOME: home,
      HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys,
      HERALD_LOG_LEVEL: 'warn',
      HERALD_ALLOW_PRIVATE_SMTP_HOSTS: 'true',
      HERALD_LOST_WORKER_SECONDS: String(LOST_WORKER_SECONDS),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', () => undefined);
  children.push(child);
  return child;
}

beforeAll(async () => {
  smtp = await startSmtpPeer();
  app = await startTestApp({ role: 'api' });
  home = mkdtempSync(join(tmpdir(), 'herald-wf-worker-'));
  acme = await createTenantFixture(app, 'Acme');
  await api('PUT', '/v1/email-transport', {
    host: smtp.host,
    port: smtp.port,
    secure: false,
    from_email: 'robot@acme.test',
    from_name: 'Acme',
  });
  await api('POST', '/v1/notification-types', {
    key: 'remind',
    channel_defaults: { inbox: true, email: true },
    workflow: {
      steps: [
        { kind: 'channel', channel: 'inbox' },
        { kind: 'delay', seconds: 2 },
        { kind: 'channel', channel: 'email' },
      ],
    },
  });
  await api('POST', '/v1/inbox-templates', { notification_type_key: 'remind', title: 'Reminder', content: 'body' });
  await api('POST', '/v1/email-templates', {
    notification_type_key: 'remind',
    subject: 'Reminder for {{ contact.external_id }}',
    content: '<p>hi</p>',
  });
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await app?.close();
  await smtp?.close();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('a worker killed mid-workflow', () => {
  it('resumes every workflow on another worker with no step run twice', { timeout: 120_000 }, async () => {
    const N = 100;
    const recipients = Array.from({ length: N }, (_, i) => ({
      external_id: `crash_${i}`,
      email: `crash_${i}@example.test`,
    }));
    const ids: string[] = (await api('POST', '/v1/notifications', { type: 'remind', recipients })).events.map(
      (e: { event_id: string }) => e.event_id,
    );
    const items = async () =>
      (await sqlOne<{ n: number }>(app, `SELECT count(*)::int AS n FROM inbox_items WHERE event_id = ANY($1::uuid[])`, [
        ids,
      ]))!.n;
    const first = startWorker();
    await eventually(async () => (await items()) >= 20, {
      timeoutMs: 60_000,
      intervalMs: 10,
      message: 'the first worker delivered nothing',
    });
    first.kill('SIGKILL');
    await once(first, 'exit');
    const held = await activeJobs(app, 'deliver-event');
    const atKill = await items();
    expect(atKill).toBeLessThan(N);
    startWorker();
    // Jobs the dead worker held stop heartbeating; the new worker's lost-job check hands them back.
    await untilHandedBack(app, 'deliver-event', held, LOST_WORKER_SECONDS * 1000 + 10_000);
    await waitForFinal(app, ids, 60_000);
    const views = await sql<{ status: string; steps: Array<{ status: string }> }>(
      app,
      `SELECT status, steps FROM events WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    expect(views.filter((v) => v.status !== 'delivered')).toEqual([]);
    expect(views.every((v) => v.steps.map((s) => s.status).join() === 'done,done,done')).toBe(true);
    // Exactly one inbox item and one email per event.
    const perEvent = await sql<{ n: number }>(
      app,
      `SELECT count(*)::int AS n FROM inbox_items WHERE event_id = ANY($1::uuid[]) GROUP BY event_id`,
      [ids],
    );
    expect(perEvent).toHaveLength(N);
    expect(perEvent.every((r) => r.n === 1)).toBe(true);
    for (const r of recipients) await smtp.waitFor((m) => m.envelope.to.includes(r.email), 20_000);
    const mails = smtp.messages.filter((m) => m.envelope.to.some((to) => to.startsWith('crash_')));
    expect(mails).toHaveLength(N);
    expect(new Set(mails.map((m) => m.envelope.to[0])).size).toBe(N);
  });
});

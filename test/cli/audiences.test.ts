// `herald topics ...`, `herald contacts import FILE` (NDJSON and CSV) and `herald broadcasts ...` as an
// admin or a CI script runs them: the real bin/herald, local mode (--tenant) and remote mode, --json,
// exit codes 0/1/2.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { runCli, type CliResult } from '../support/cli.ts';
import {
  createTenantFixture,
  insertInboxTemplate,
  insertNotificationType,
  sql,
  sqlOne,
  type TenantFixture,
} from '../support/fixtures.ts';

// Every CLI call starts a Node process; allow for a loaded machine.
vi.setConfig({ testTimeout: 120_000 });

let app: TestApp;
let acme: TenantFixture;
let dir: string;
let remote: Record<string, string | undefined>;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  await insertNotificationType(app, acme.tenantId, { key: 'news' });
  await insertInboxTemplate(app, acme.tenantId, { type: 'news', title: 'News {{ headline }}', content: 'x' });
  dir = mkdtempSync(join(tmpdir(), 'herald-cli-audiences-'));
  remote = { HERALD_URL: app.url, HERALD_API_KEY: acme.serviceKey };
});
afterAll(async () => {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Local mode: the CLI talks to the test app's database directly (--tenant unless `tenant` is false). */
function local(args: string[], tenant = true): Promise<CliResult> {
  return runCli(tenant ? [...args, '--tenant', acme.tenantId] : args, {
    env: {
      DATABASE_URL: app.database.url,
      HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys,
      HERALD_HOME: app.dataDir,
      HERALD_URL: undefined,
      HERALD_API_KEY: undefined,
    },
  });
}

describe('herald topics', () => {
  it('creates, subscribes, pages and deletes a topic in local mode', async () => {
    const created = await local(['topics', 'create', 'beta', '--name', 'Beta testers', '--json']);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ key: 'beta', name: 'Beta testers', subscriber_count: 0 });
    const ids = join(dir, 'ids.txt');
    writeFileSync(ids, Array.from({ length: 1500 }, (_, i) => `beta-${i}`).join('\n') + '\n');
    const subscribed = await local(['topics', 'subscribe', 'beta', 'extra-1', '--file', ids, '--json']);
    expect(subscribed.code, subscribed.stderr).toBe(0);
    expect(JSON.parse(subscribed.stdout)).toEqual({ added: 1501 });
    const got = await local(['topics', 'get', 'beta']);
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/beta\s+Beta testers\s+1501/);
    const all = await local(['topics', 'subscribers', 'beta', '--all', '--json']);
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(all.stdout).items).toHaveLength(1501);
    const page = await local(['topics', 'subscribers', 'beta', '--limit', '10']);
    expect(page.stdout).toMatch(/more: --cursor \S+/);
    const removed = await local(['topics', 'unsubscribe', 'beta', 'extra-1', 'nobody', '--json']);
    expect(JSON.parse(removed.stdout)).toEqual({ removed: 1 });
    const list = await local(['topics', 'list', '--json']);
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ key: 'beta', subscriber_count: 1500 })]);
    expect((await local(['topics', 'delete', 'beta'])).code).toBe(2); // no --yes without a terminal
    expect((await local(['topics', 'delete', 'beta', '--yes'])).code).toBe(0);
    const gone = await local(['topics', 'get', 'beta']);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/not found/i);
  });

  it('works remotely with the same commands; usage errors exit 2, API refusals 1', async () => {
    const created = await runCli(['topics', 'create', 'remote-topic', '--json'], { env: remote });
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ key: 'remote-topic', name: 'remote-topic' });
    const subscribed = await runCli(['topics', 'subscribe', 'remote-topic', 'r1', 'r2'], { env: remote });
    expect(subscribed.stdout).toMatch(/subscribed 2 new contact/);
    expect((await runCli(['topics', 'create', 'remote-topic'], { env: remote })).code).toBe(1); // 409
    expect((await runCli(['topics', 'create', 'Bad Key'], { env: remote })).code).toBe(1); // 422
    expect((await runCli(['topics', 'subscribe', 'remote-topic'], { env: remote })).code).toBe(2); // no ids
    // Locally, --tenant may be left out only when the install has one tenant.
    await createTenantFixture(app, 'Second');
    const none = await local(['topics', 'list'], false);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/--tenant <id>.*--url/);
  });
});

describe('herald contacts import', () => {
  it('streams NDJSON, reporting refused lines by number (exit 1) and keeping the rest', async () => {
    const file = join(dir, 'contacts.ndjson');
    writeFileSync(
      file,
      [
        '{"external_id": "nd-1", "name": "One"}',
        '{"external_id": "nd-2", "email": "bad"}',
        '',
        'nope',
        '{"external_id": "nd-3"}',
      ].join('\n'),
    );
    const res = await runCli(['contacts', 'import', file, '--json'], { env: remote });
    expect(res.code).toBe(1);
    const summary = JSON.parse(res.stdout);
    expect(summary).toMatchObject({ created: 2, updated: 0, refused: 2 });
    expect(summary.errors.map((e: { line: number }) => e.line)).toEqual([2, 4]);
    const human = await runCli(['contacts', 'import', file], { env: remote });
    expect(human.stdout).toMatch(/created 0, updated 2, refused 2/);
    expect(human.stdout).toMatch(/line 2: email/);
  });

  it('converts CSV (quoted fields, line breaks inside them, extra columns as properties) and maps lines back', async () => {
    const file = join(dir, 'contacts.csv');
    writeFileSync(
      file,
      'external_id,email,name,plan\r\n' +
        'csv-1,ann@example.test,"Ann, the first",pro\r\n' +
        'csv-2,bad-email,Bob,\r\n' +
        'csv-3,,"Multi\nline ""quoted"" name",free\r\n' +
        'csv-4,,Dee,\r\n' +
        ',,no id,\r\n',
    );
    const res = await runCli(['contacts', 'import', file, '--json'], { env: remote });
    expect(res.code).toBe(1);
    const summary = JSON.parse(res.stdout);
    expect(summary).toMatchObject({ created: 3, refused: 2 });
    // Lines of the CSV file: csv-2 is on line 3; the record without an id starts on line 7.
    expect(summary.errors.map((e: { line: number }) => e.line)).toEqual([3, 7]);
    const rows = await sql(
      app,
      `SELECT external_id, email, name, properties FROM contacts WHERE tenant_id = $1 AND external_id LIKE 'csv-%' ORDER BY external_id`,
      [acme.tenantId],
    );
    expect(rows).toEqual([
      { external_id: 'csv-1', email: 'ann@example.test', name: 'Ann, the first', properties: { plan: 'pro' } },
      { external_id: 'csv-3', email: null, name: 'Multi\nline "quoted" name', properties: { plan: 'free' } },
      { external_id: 'csv-4', email: null, name: 'Dee', properties: {} },
    ]);
  });

  it('exits 2 for a CSV without an external_id column, a missing file or an unknown format', async () => {
    const file = join(dir, 'noid.csv');
    writeFileSync(file, 'email,name\na@example.test,A\n');
    expect((await runCli(['contacts', 'import', file], { env: remote })).code).toBe(2);
    expect((await runCli(['contacts', 'import', join(dir, 'missing.ndjson')], { env: remote })).code).toBe(2);
    expect((await runCli(['contacts', 'import', file, '--format', 'xml'], { env: remote })).code).toBe(2);
  });
});

describe('herald broadcasts', () => {
  it('creates a broadcast to a topic and waits for it (exit 0), then gets and lists it', async () => {
    await runCli(['topics', 'create', 'news-readers'], { env: remote });
    await runCli(['topics', 'subscribe', 'news-readers', 'reader-1', 'reader-2', 'reader-3'], { env: remote });
    const res = await runCli(
      ['broadcasts', 'create', '--type', 'news', '--topic', 'news-readers', '--var', 'headline=Hi', '--wait', '--json'],
      { env: remote },
    );
    expect(res.code, res.stderr).toBe(0);
    const done = JSON.parse(res.stdout);
    expect(done).toMatchObject({
      status: 'completed',
      targeted: 3,
      events_created: 3,
      counts: { delivered: 3, pending: 0 },
    });
    const got = await runCli(['broadcasts', 'get', done.broadcast_id], { env: remote });
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/status\s+completed/);
    expect(got.stdout).toMatch(/delivered 3/);
    const list = await runCli(['broadcasts', 'list', '--json'], { env: remote });
    expect(JSON.parse(list.stdout).items.map((b: { broadcast_id: string }) => b.broadcast_id)).toContain(
      done.broadcast_id,
    );
    const canceled = await runCli(['broadcasts', 'cancel', done.broadcast_id, '--yes'], { env: remote });
    expect(canceled.code).toBe(1); // completed: 409
  });

  it('schedules one with --send-at, cancels it with --yes, and --wait reports the cancel (exit 1)', async () => {
    const later = new Date(Date.now() + 3600_000).toISOString();
    const res = await runCli(
      [
        'broadcasts',
        'create',
        '--type',
        'news',
        '--all-contacts',
        '--var',
        'headline=Later',
        '--send-at',
        later,
        '--idempotency-key',
        'cli-later',
        '--json',
      ],
      { env: remote },
    );
    expect(res.code, res.stderr).toBe(0);
    const { broadcast_id: id } = JSON.parse(res.stdout);
    const again = await runCli(
      [
        'broadcasts',
        'create',
        '--type',
        'news',
        '--all-contacts',
        '--var',
        'headline=Later',
        '--send-at',
        later,
        '--idempotency-key',
        'cli-later',
        '--json',
      ],
      { env: remote },
    );
    expect(JSON.parse(again.stdout).broadcast_id).toBe(id);
    expect((await runCli(['broadcasts', 'cancel', id], { env: remote })).code).toBe(2); // no --yes
    const canceled = await runCli(['broadcasts', 'cancel', id, '--yes', '--json'], { env: remote });
    expect(canceled.code).toBe(0);
    expect(JSON.parse(canceled.stdout)).toMatchObject({ status: 'canceled', events_created: 0 });
    const waited = await runCli(['broadcasts', 'get', id, '--wait', '--timeout', '10'], { env: remote });
    expect(waited.code).toBe(1);
    expect(waited.stderr).toMatch(/canceled/);
    expect(await sqlOne(app, `SELECT count(*)::int AS n FROM events WHERE broadcast_id = $1`, [id])).toEqual({ n: 0 });
  });

  it('exits 2 for a missing or double audience and 1 for an API refusal', async () => {
    expect((await runCli(['broadcasts', 'create', '--type', 'news'], { env: remote })).code).toBe(2);
    expect(
      (await runCli(['broadcasts', 'create', '--type', 'news', '--topic', 'x', '--all-contacts'], { env: remote }))
        .code,
    ).toBe(2);
    const unknown = await runCli(['broadcasts', 'create', '--type', 'nope', '--all-contacts'], { env: remote });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/type/);
    expect((await runCli(['broadcasts', 'get', '00000000-0000-7000-8000-000000000000'], { env: remote })).code).toBe(1);
  });
});

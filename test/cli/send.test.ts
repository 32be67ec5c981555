// herald send and herald events get|list, run as the real executable against a running Herald.
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { runCli } from '../support/cli.ts';
import {
  insertInboxTemplate,
  createTenantFixture,
  insertNotificationType,
  sqlOne,
  type TenantFixture,
} from '../support/fixtures.ts';

let app: TestApp;
let acme: TenantFixture;
let dir: string;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  await insertNotificationType(app, acme.tenantId, { key: 'deploy', variables: [{ name: 'version', required: true }] });
  await insertInboxTemplate(app, acme.tenantId, {
    type: 'deploy',
    title: 'Deployed {{ version }}',
    content: 'by {{ who }} code {{ code }}',
  });
  await insertNotificationType(app, acme.tenantId, {
    key: 'text_only',
    channels: { inbox: false, email: false, push: false, web_push: false, sms: true },
  });
  await insertNotificationType(app, acme.tenantId, {
    key: 'inbox_and_sms',
    channels: { inbox: true, email: false, push: false, web_push: false, sms: true },
  });
  await insertInboxTemplate(app, acme.tenantId, { type: 'inbox_and_sms', title: 'Hi', content: 'there' });
  await insertNotificationType(app, acme.tenantId, { key: 'broken' });
  await insertInboxTemplate(app, acme.tenantId, { type: 'broken', title: 'x', content: '{{ missing_slot }}' });
  dir = mkdtempSync(join(tmpdir(), 'herald-cli-send-'));
});
afterAll(async () => {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

const remote = () => ['--url', app.url, '--api-key', acme.serviceKey];

describe('herald send', () => {
  it('sends, waits until delivered and prints JSON with secrets masked', async () => {
    const file = join(dir, 'vars.json');
    writeFileSync(file, JSON.stringify({ who: 'file', version: 'from-file' }));
    const res = await runCli([
      'send',
      '--type',
      'deploy',
      '--to',
      'ops_1',
      '--to',
      'ops_2',
      '--var',
      'version=1.4.2',
      '--data-file',
      file,
      '--secret',
      'code=s3cr3t-cli',
      '--wait',
      '--json',
      ...remote(),
    ]);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out.events).toHaveLength(2);
    for (const e of out.events) {
      expect(e.status).toBe('delivered');
      expect(e.variables).toEqual({ who: 'file', version: '1.4.2', code: '********' });
    }
    expect(res.stdout).not.toContain('s3cr3t-cli');
    const item = await sqlOne<{ title: string; body: string }>(
      app,
      `SELECT title, body FROM inbox_items WHERE event_id = $1`,
      [out.events[0].event_id],
    );
    expect(item).toEqual({ title: 'Deployed 1.4.2', body: 'by file code s3cr3t-cli' });
  });

  it('reads secret variables from --secrets-file (a file, or - for stdin), keeping them out of the process list and of its errors', async () => {
    const res = await runCli(
      [
        'send',
        '--type',
        'deploy',
        '--to',
        'ops_3',
        '--var',
        'version=5',
        '--var',
        'who=stdin',
        '--secrets-file',
        '-',
        '--wait',
        '--json',
        ...remote(),
      ],
      {
        input: JSON.stringify({ code: 'from-stdin-secret' }),
      },
    );
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out.events[0].variables).toEqual({ version: '5', who: 'stdin', code: '********' });
    const item = await sqlOne<{ body: string }>(app, `SELECT body FROM inbox_items WHERE event_id = $1`, [
      out.events[0].event_id,
    ]);
    expect(item!.body).toBe('by stdin code from-stdin-secret');

    const file = join(dir, 'secrets.json');
    writeFileSync(file, '{"code": half-written-secret}'); // JSON.parse would quote this in its message
    const broken = await runCli([
      'send',
      '--type',
      'deploy',
      '--to',
      'ops_3',
      '--var',
      'version=5',
      '--secrets-file',
      file,
      ...remote(),
    ]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('--secrets-file');
    expect(broken.stderr + broken.stdout).not.toContain('half-writ');
  });

  it('exits 1 with --wait when a delivery failed', async () => {
    const res = await runCli(['send', '--type', 'broken', '--to', 'b1', '--wait', ...remote()]);
    expect(res.code).toBe(1);
    expect(res.stdout).toContain('failed');
    expect(res.stderr).toContain('failed delivery');
  });

  it('exits 1 with --wait when every delivery was skipped, naming the reasons', async () => {
    // The contact has no phone and the tenant no SMS provider: the one delivery is skipped.
    const res = await runCli(['send', '--type', 'text_only', '--to', 'no_phone', '--wait', ...remote()]);
    expect(res.stdout).toMatch(/skipped\s+sms:skipped\(\w+\)/);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^herald: 1 event\(s\) sent nothing, every delivery skipped: sms (no_\w+)\n$/);

    // With --json the answer is on stdout and the reason still on stderr.
    const json = await runCli(['send', '--type', 'text_only', '--to', 'no_phone', '--wait', '--json', ...remote()]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).events[0].status).toBe('skipped');
    expect(json.stderr).toContain('sent nothing');
  });

  it('exits 0 with --wait when one channel delivered and another was skipped', async () => {
    const res = await runCli(['send', '--type', 'inbox_and_sms', '--to', 'no_phone', '--wait', ...remote()]);
    expect(res.stdout).toMatch(
      /delivered\s+inbox:delivered, sms:skipped|delivered\s+sms:skipped\(\w+\), inbox:delivered/,
    );
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
  });

  it('takes the server and key from HERALD_URL / HERALD_API_KEY, and replays with an idempotency key', async () => {
    const env = { HERALD_URL: app.url, HERALD_API_KEY: acme.serviceKey };
    const args = [
      'send',
      '--type',
      'deploy',
      '--to',
      'idem',
      '--var',
      'version=2',
      '--idempotency-key',
      'ci-build-77',
      '--json',
    ];
    const first = await runCli(args, { env });
    const second = await runCli(args, { env });
    expect(first.code).toBe(0);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toEqual(JSON.parse(first.stdout));
  });

  it('exits 1 on an API error, with the server message', async () => {
    const res = await runCli(['send', '--type', 'nope', '--to', 'x', ...remote()]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('422');
    expect(res.stderr).toContain('body.type');
  });

  it.each([
    ['no --type', ['send', '--to', 'x']],
    ['no --to', ['send', '--type', 'deploy']],
    ['a malformed --var', ['send', '--type', 'deploy', '--to', 'x', '--var', 'novalue']],
    ['a bad --timeout', ['send', '--type', 'deploy', '--to', 'x', '--wait', '--timeout', 'soon']],
  ])('exits 2 for %s', async (_name, args) => {
    const res = await runCli([...args, ...remote()]);
    expect(res.code).toBe(2);
  });

  it('reads the service key from --api-key-file (a file, or - for stdin), never printing it', async () => {
    const noKeyEnv = { HERALD_API_KEY: undefined };
    const keyFile = join(dir, 'service-key');
    writeFileSync(keyFile, `${acme.serviceKey}\n`); // as `echo` or a mounted secret writes it
    const fromFile = await runCli(
      [
        'send',
        '--type',
        'deploy',
        '--to',
        'keyfile_1',
        '--var',
        'version=6',
        '--json',
        '--url',
        app.url,
        '--api-key-file',
        keyFile,
      ],
      { env: noKeyEnv },
    );
    expect(fromFile.stderr).toBe('');
    expect(fromFile.code).toBe(0);
    expect(JSON.parse(fromFile.stdout).events).toHaveLength(1);

    const fromStdin = await runCli(
      ['events', 'list', '--external-id', 'keyfile_1', '--json', '--url', app.url, '--api-key-file', '-'],
      { env: noKeyEnv, input: acme.serviceKey },
    );
    expect(fromStdin.code).toBe(0);
    expect(JSON.parse(fromStdin.stdout).items).toHaveLength(1);

    // A wrong key in the file: refused by the server, and the key is not echoed.
    writeFileSync(keyFile, 'sk_wrong-key-from-file');
    const refused = await runCli(['events', 'list', '--url', app.url, '--api-key-file', keyFile], { env: noKeyEnv });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('401');
    expect(refused.stderr + refused.stdout).not.toContain('wrong-key-from-file');
  });

  it.each([
    ['both --api-key and --api-key-file', ['--api-key', 'sk_x', '--api-key-file', '/dev/null'], undefined, 'not both'],
    ['a missing --api-key-file', ['--api-key-file', '/nonexistent/key'], undefined, 'ENOENT'],
    ['an empty --api-key-file', ['--api-key-file', '-'], '\n', 'is empty'],
    [
      'stdin asked for the key and the secrets',
      ['--api-key-file', '-', '--secrets-file', '-'],
      '{}',
      'cannot both come from stdin',
    ],
  ])('exits 2 for %s', async (_name, args, input, message) => {
    const res = await runCli(['send', '--type', 'deploy', '--to', 'x', '--url', app.url, ...args], {
      env: { HERALD_API_KEY: undefined },
      input,
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(message);
  });

  it('exits 2 without a server or key', async () => {
    const res = await runCli(['send', '--type', 'deploy', '--to', 'x'], {
      env: { HERALD_URL: undefined, HERALD_API_KEY: undefined },
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('HERALD_URL');
  });
});

describe('herald events', () => {
  it('gets one event and lists the activity log', async () => {
    const sent = await runCli([
      'send',
      '--type',
      'deploy',
      '--to',
      'ev_1',
      '--var',
      'version=3',
      '--var',
      'who=ci',
      '--secret',
      'code=zz-hidden',
      '--wait',
      '--json',
      ...remote(),
    ]);
    const id = JSON.parse(sent.stdout).events[0].event_id;
    const got = await runCli(['events', 'get', id, '--json', ...remote()]);
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({
      event_id: id,
      status: 'delivered',
      variables: { version: '3', code: '********' },
    });
    const human = await runCli(['events', 'get', id, ...remote()]);
    expect(human.stdout).toContain('delivered');
    expect(human.stdout).not.toContain('zz-hidden');
    const list = await runCli(['events', 'list', '--external-id', 'ev_1', '--json', ...remote()]);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout).items.map((e: { event_id: string }) => e.event_id)).toEqual([id]);
    const table = await runCli(['events', 'list', '--type', 'deploy', '--limit', '1', ...remote()]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('more: --cursor');
  });

  it('says an event has no deliveries yet, rather than a bare (none)', async () => {
    const sent = await runCli([
      'send',
      '--type',
      'deploy',
      '--to',
      'ev_later',
      '--var',
      'version=4',
      '--at',
      new Date(Date.now() + 86_400_000).toISOString(),
      '--json',
      ...remote(),
    ]);
    expect(sent.code, sent.stderr).toBe(0);
    const id = JSON.parse(sent.stdout).events[0].event_id;
    const human = await runCli(['events', 'get', id, ...remote()]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/status +scheduled\n/);
    expect(human.stdout).not.toContain('(none)');
    expect(human.stdout.trimEnd().split('\n').at(-1)).toBe('no deliveries yet');
  });

  it('exits 1 for an unknown event', async () => {
    const res = await runCli(['events', 'get', '0190a000-0000-7000-8000-000000000000', ...remote()]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('404');
  });
});

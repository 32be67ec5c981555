// herald types workflow get|set|remove, herald send --at --cancellation-key, herald events cancel, run
// as the real executable against a running Herald.
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
  await insertNotificationType(app, acme.tenantId, { key: 'reminder' });
  await insertInboxTemplate(app, acme.tenantId, { type: 'reminder', title: 'Reminder', content: 'body' });
  dir = mkdtempSync(join(tmpdir(), 'herald-cli-wf-'));
});
afterAll(async () => {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

const remote = () => ['--url', app.url, '--api-key', acme.serviceKey];

describe('herald types workflow', () => {
  it('sets a workflow from a file, shows it, and removes it', { timeout: 120_000 }, async () => {
    const file = join(dir, 'workflow.json');
    const steps = [
      { kind: 'channel', channel: 'inbox' },
      { kind: 'delay', seconds: 3600 },
      { kind: 'channel', channel: 'email', if: 'inbox.read == false' },
    ];
    writeFileSync(file, JSON.stringify({ steps }));
    const set = await runCli(['types', 'workflow', 'set', 'reminder', '-f', file, ...remote()]);
    expect(set.stderr).toBe('');
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('workflow of reminder set: 3 step(s)');
    const get = await runCli(['types', 'workflow', 'get', 'reminder', '--json', ...remote()]);
    expect(get.code).toBe(0);
    expect(JSON.parse(get.stdout)).toEqual({ steps });
    const table = await runCli(['types', 'workflow', 'get', 'reminder', ...remote()]);
    expect(table.stdout).toContain('inbox.read == false');
    const removed = await runCli(['types', 'workflow', 'remove', 'reminder', ...remote()]);
    expect(removed.code).toBe(0);
    expect(
      JSON.parse((await runCli(['types', 'workflow', 'get', 'reminder', '--json', ...remote()])).stdout),
    ).toBeNull();
  });

  it(
    "exits 1 with the API's reasons for a bad workflow, and 2 for a file that is not one",
    { timeout: 120_000 },
    async () => {
      const bad = join(dir, 'bad.json');
      writeFileSync(bad, JSON.stringify({ steps: [{ kind: 'delay', seconds: -1 }] }));
      const refused = await runCli(['types', 'workflow', 'set', 'reminder', '-f', bad, ...remote()]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('seconds');
      const notWorkflow = join(dir, 'list.json');
      writeFileSync(notWorkflow, JSON.stringify({ kind: 'delay' }));
      expect((await runCli(['types', 'workflow', 'set', 'reminder', '-f', notWorkflow, ...remote()])).code).toBe(2);
      expect((await runCli(['types', 'workflow', 'get', 'no_such_type', ...remote()])).code).toBe(1);
    },
  );
});

describe('herald send --at and herald events cancel', () => {
  it('schedules a send with a cancellation key, and cancels it by key', { timeout: 120_000 }, async () => {
    const at = new Date(Date.now() + 3600_000).toISOString();
    const sent = await runCli([
      'send',
      '--type',
      'reminder',
      '--to',
      'cli_wf_1',
      '--to',
      'cli_wf_2',
      '--at',
      at,
      '--cancellation-key',
      'trial-1',
      '--json',
      ...remote(),
    ]);
    expect(sent.code).toBe(0);
    const events = JSON.parse(sent.stdout).events as Array<{ event_id: string; status: string }>;
    expect(events.map((e) => e.status)).toEqual(['scheduled', 'scheduled']);
    const shown = await runCli(['events', 'get', events[0]!.event_id, ...remote()]);
    expect(shown.stdout).toContain(`send at    ${at}`);
    const canceled = await runCli(['events', 'cancel', '--key', 'trial-1', '--json', ...remote()]);
    expect(canceled.code).toBe(0);
    expect(JSON.parse(canceled.stdout)).toEqual({ canceled: 2 });
    const row = await sqlOne<{ status: string }>(app, `SELECT status FROM events WHERE id = $1`, [events[1]!.event_id]);
    expect(row!.status).toBe('canceled');
  });

  it(
    'cancels one event by id; exits 1 when it is final already, 2 for a bad --at or no target',
    { timeout: 120_000 },
    async () => {
      const at = new Date(Date.now() + 3600_000).toISOString();
      const sent = JSON.parse(
        (await runCli(['send', '--type', 'reminder', '--to', 'cli_wf_3', '--at', at, '--json', ...remote()])).stdout,
      );
      const id = sent.events[0].event_id as string;
      const first = await runCli(['events', 'cancel', id, ...remote()]);
      expect(first.code).toBe(0);
      expect(first.stdout).toContain(`canceled ${id}`);
      const again = await runCli(['events', 'cancel', id, ...remote()]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('canceled already');
      expect((await runCli(['send', '--type', 'reminder', '--to', 'x', '--at', 'soon', ...remote()])).code).toBe(2);
      expect((await runCli(['events', 'cancel', ...remote()])).code).toBe(2);
    },
  );
});

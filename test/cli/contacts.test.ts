// `herald contacts ...` as a CI script or an admin runs it: the real bin/herald against a real server,
// remote mode from flags or HERALD_URL/HERALD_API_KEY, --json output and exit codes 0/1/2.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, type TestApp } from '../support/app.ts';
import { runCli } from '../support/cli.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';

// Every CLI call starts a Node process; allow for a loaded machine.
vi.setConfig({ testTimeout: 120_000 });

let app: TestApp;
let acme: TenantFixture;
let dir: string;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  dir = mkdtempSync(join(tmpdir(), 'herald-cli-contacts-'));
  env = { HERALD_URL: app.url, HERALD_API_KEY: acme.serviceKey };
});
afterAll(async () => {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('herald contacts create / find / get / update', () => {
  it('creates a contact, finds it, updates some fields keeping the others', async () => {
    const created = await runCli(
      [
        'contacts',
        'create',
        'cli-1',
        '--email',
        'ann@example.org',
        '--name',
        'Ann',
        '--property',
        'plan="pro"',
        '--property',
        'seats=3',
        '--json',
      ],
      { env },
    );
    expect(created.code, created.stderr).toBe(0);
    const contact = JSON.parse(created.stdout);
    expect(contact).toMatchObject({
      external_id: 'cli-1',
      email: 'ann@example.org',
      name: 'Ann',
      properties: { plan: 'pro', seats: 3 },
    });

    const found = await runCli(['contacts', 'find', 'cli-1', '--json'], { env });
    expect(found.code).toBe(0);
    expect(JSON.parse(found.stdout).id).toBe(contact.id);

    const updated = await runCli(['contacts', 'update', contact.id, '--language', 'de', '--clear', 'name', '--json'], {
      env,
    });
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({
      email: 'ann@example.org',
      name: null,
      language: 'de',
      properties: { plan: 'pro', seats: 3 },
    });

    // Flags instead of the environment, human output.
    const got = await runCli(['contacts', 'get', contact.id, '--url', app.url, '--api-key', acme.serviceKey], {
      env: { HERALD_URL: undefined, HERALD_API_KEY: undefined },
    });
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/external_id\s+cli-1/);
    expect(got.stdout).toMatch(/language\s+de/);
  });

  it('exits 1 for an existing external_id and an unknown contact, 2 for refused input', async () => {
    await runCli(['contacts', 'create', 'cli-dup'], { env });
    const dup = await runCli(['contacts', 'create', 'cli-dup'], { env });
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/already exists/);
    const missing = await runCli(['contacts', 'find', 'nobody'], { env });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/not found/);
    const bad = await runCli(['contacts', 'create', 'cli-bad', '--email', 'broken'], { env });
    expect(bad.code).toBe(1); // 422
    expect(bad.stderr).toMatch(/email/);
    const nothing = await runCli(['contacts', 'update', '01890a5d-ac96-774b-bcce-b302099a8057'], { env });
    expect(nothing.code).toBe(2);
  });

  it('exits 2 without a URL or key, 1 for a refused key or an unreachable server', async () => {
    const noUrl = await runCli(['contacts', 'find', 'x'], {
      env: { HERALD_URL: undefined, HERALD_API_KEY: acme.serviceKey },
    });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toMatch(/HERALD_URL/);
    const noKey = await runCli(['contacts', 'find', 'x'], { env: { HERALD_URL: app.url, HERALD_API_KEY: undefined } });
    expect(noKey.code).toBe(2);
    const refused = await runCli(['contacts', 'find', 'x'], {
      env: { HERALD_URL: app.url, HERALD_API_KEY: 'sk_wrong' },
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/service key was refused/);
    expect(refused.stderr).not.toContain('sk_wrong');
    const down = await runCli(['contacts', 'find', 'x'], {
      env: { HERALD_URL: 'http://127.0.0.1:9', HERALD_API_KEY: acme.serviceKey },
    });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot reach Herald/);
  });
});

describe('herald contacts delete', () => {
  it('refuses without --yes when stdin is not a terminal, deletes with it', async () => {
    const created = JSON.parse((await runCli(['contacts', 'create', 'cli-del', '--json'], { env })).stdout);
    const refused = await runCli(['contacts', 'delete', created.id], { env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--yes/);
    const deleted = await runCli(['contacts', 'delete', created.id, '--yes', '--json'], { env });
    expect(deleted.code).toBe(0);
    expect(JSON.parse(deleted.stdout)).toEqual({ deleted: created.id });
    expect((await runCli(['contacts', 'get', created.id], { env })).code).toBe(1);
  });
});

describe('herald contacts destinations add --create', () => {
  const contactStatus = async (externalId: string) =>
    (await app.request('GET', `/v1/contacts?external_id=${externalId}`, { token: acme.serviceKey })).status;

  it('deletes the contact it created when Herald refuses the destination, and keeps one that was there', async () => {
    // A Slack destination needs a webhook URL or a channel: Herald refuses this one with a 422.
    const refused = await runCli(['contacts', 'destinations', 'add', 'team-gone', '--create', '--provider', 'slack'], {
      env,
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^herald: HTTP 422/);
    expect(await contactStatus('team-gone')).toBe(404);

    const existing = await runCli(['contacts', 'create', 'team-kept', '--json'], { env });
    expect(existing.code, existing.stderr).toBe(0);
    const kept = await runCli(['contacts', 'destinations', 'add', 'team-kept', '--create', '--provider', 'slack'], {
      env,
    });
    expect(kept.code).toBe(1);
    expect(await contactStatus('team-kept')).toBe(200);
  });

  it('keeps the contact it created when the destination is added', async () => {
    const added = await runCli(
      ['contacts', 'destinations', 'add', 'team-new', '--create', '--provider', 'slack', '--channel', 'C0123456789'],
      { env },
    );
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^added slack destination \S+ \(C0123456789\)\n$/);
    expect(await contactStatus('team-new')).toBe(200);
  });
});

describe('herald contacts import', () => {
  it('imports a file in bulk, reports refused entries by index and exits 1 for them', async () => {
    const file = join(dir, 'contacts.json');
    const contacts = Array.from({ length: 620 }, (_, i) => ({ external_id: `imp-${i}`, name: `N${i}` }));
    contacts[550] = { external_id: 'imp-550', email: 'broken' } as never;
    writeFileSync(file, JSON.stringify({ contacts }));
    const res = await runCli(['contacts', 'import', file, '--json'], { env });
    expect(res.code).toBe(1);
    const summary = JSON.parse(res.stdout);
    expect(summary.created).toBe(619);
    expect(summary.errors).toEqual([{ index: 550, detail: expect.stringContaining('email') }]);
    // Again: everything is an update now.
    writeFileSync(file, JSON.stringify(contacts.filter((_, i) => i !== 550)));
    const again = await runCli(['contacts', 'import', file], { env });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/created 0, updated 619, refused 0/);
  });

  it('exits 2 for a missing or malformed file', async () => {
    expect((await runCli(['contacts', 'import', join(dir, 'nope.json')], { env })).code).toBe(2);
    const file = join(dir, 'bad.json');
    writeFileSync(file, '{"contacts": ');
    expect((await runCli(['contacts', 'import', file], { env })).code).toBe(2);
  });
});

describe('herald contacts token', () => {
  it('prints a contact token that opens the contact inbox', async () => {
    const id = await acme.contact('cli-token');
    const res = await runCli(['contacts', 'token', 'cli-token'], { env });
    expect(res.code).toBe(0);
    const token = res.stdout.trim();
    expect((await app.request('GET', `/v1/contacts/${id}/notifications`, { token })).status).toBe(200);
    const json = await runCli(['contacts', 'token', 'cli-token', '--json'], { env });
    expect(JSON.parse(json.stdout)).toMatchObject({ token_type: 'bearer', contact_id: id, expires_in: 3600 });
    expect((await runCli(['contacts', 'token', 'nobody'], { env })).code).toBe(1);
  });
});

// The quick start's first notification, as a new admin runs it (the real bin/herald, a real server):
// `herald init` in single mode seeds the `welcome` type with inbox and email templates; then the
// README's three commands (issue a key, create a contact, send) deliver it to the inbox, and the demo
// page's example commands work as printed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERALD_BIN, runCli } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTenantFixture } from '../support/fixtures.ts';
import { seedWelcomeNotification } from '../../server/resources/welcome.ts';

const CLI_TIMEOUT = 240_000;

let database: TestDatabase;
let dataDir: string;
let server: ChildProcess | null = null;
let url = '';
let env: Record<string, string | undefined>;

beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = mkdtempSync(join(tmpdir(), 'herald-welcome-'));
  chmodSync(dataDir, 0o711);
  env = {
    HERALD_HOME: dataDir,
    DATABASE_URL: database.url,
    HERALD_ENCRYPTION_KEYS: undefined,
    HERALD_URL: undefined,
    HERALD_API_KEY: undefined,
    HERALD_LOG_LEVEL: 'warn',
  };
}, CLI_TIMEOUT);
afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((resolve) => server!.once('exit', resolve));
  }
  await database?.drop().catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
});

const herald = (args: string[], extra: Record<string, string> = {}) =>
  runCli(args, { env: { ...env, ...extra }, timeoutMs: CLI_TIMEOUT });

function startServer(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(HERALD_BIN, ['start', '--port', '0'], {
      env: { ...process.env, ...env, HERALD_ENCRYPTION_KEYS: '' } as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server = child;
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`server did not start: ${err}`)), CLI_TIMEOUT);
    child.stdout!.on('data', (d) => {
      out += d;
      const match = /Herald listening on (\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.stderr!.on('data', (d) => (err += d));
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
}

describe('the first notification after herald init', () => {
  it('init seeds welcome; the quick start commands deliver it to the inbox; the demo page example works', async () => {
    const init = await herald([
      'init',
      '--yes',
      '--mode',
      'single',
      '--database-url',
      database.url,
      '--tenant',
      'Acme',
      '--owner-email',
      'owner@acme.test',
    ]);
    expect(init.code, init.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(dataDir, 'herald.json'), 'utf8')).databaseUrl).toBe(database.url);

    url = await startServer();
    const remote = { HERALD_URL: url };

    // 1. issue a key (local, the install's only tenant)
    const issued = await herald(['api-keys', 'issue', '--name', 'quickstart'], remote);
    expect(issued.code, issued.stderr).toBe(0);
    const key = issued.stdout.trim();
    expect(key).toMatch(/^sk_/);
    const withKey = { ...remote, HERALD_API_KEY: key };

    const types = await herald(['types', 'get', 'welcome', '--json'], withKey);
    expect(JSON.parse(types.stdout)).toMatchObject({
      key: 'welcome',
      channel_defaults: { inbox: true, email: true },
      variables: [{ name: 'name', required: true }],
    });
    const templates = JSON.parse((await herald(['templates', 'list', '--type', 'welcome', '--json'], withKey)).stdout);
    expect(templates.map((t: { kind: string; brand_key: string }) => `${t.kind}:${t.brand_key}`)).toEqual([
      'email:default',
      'inbox:default',
    ]);

    // 2. create a contact, 3. send
    const created = await herald(['contacts', 'create', 'demo-user', '--email', 'demo@example.com'], withKey);
    expect(created.code, created.stderr).toBe(0);
    const sent = await herald(
      ['send', '--type', 'welcome', '--to', 'demo-user', '--var', 'name=Ann', '--wait', '--json'],
      withKey,
    );
    expect(sent.code, sent.stderr + sent.stdout).toBe(0);

    // The demo page's example: a contact token, then the inbox the widget reads.
    const token = await herald(['contacts', 'token', 'demo-user', '--json'], withKey);
    expect(token.code, token.stderr).toBe(0);
    const minted = JSON.parse(token.stdout) as { token: string; contact_id: string };
    const inbox = await fetch(`${url}/v1/contacts/${minted.contact_id}/notifications`, {
      headers: { authorization: `Bearer ${minted.token}` },
    });
    const body = (await inbox.json()) as {
      items: Array<{ type: string; title: string; body: string }>;
      unread_count: number;
    };
    expect(body.unread_count).toBe(1);
    expect(body.items[0]).toMatchObject({
      type: 'welcome',
      title: 'Welcome, Ann!',
      body: 'This is your first notification from Acme, delivered by Herald.',
    });
    const demo = await fetch(`${url}/demo`);
    expect(demo.status).toBe(200);
    const page = await demo.text();
    for (const command of [
      'herald contacts create demo-user',
      'herald contacts token demo-user',
      'herald send --type welcome --to demo-user --var name=Ann',
    ]) {
      expect(page).toContain(command);
    }
  });

  it('seeds once: a tenant that has a welcome type keeps it', async () => {
    const app: TestApp = await startTestApp();
    try {
      const fx = await createTenantFixture(app);
      expect(await seedWelcomeNotification(app.runtime.orm.em.fork(), fx.tenantId)).toBe(true);
      expect(await seedWelcomeNotification(app.runtime.orm.em.fork(), fx.tenantId)).toBe(false);
      const rendered = await app.request('POST', '/v1/email-templates/render', {
        token: fx.serviceKey,
        body: { notification_type_key: 'welcome', variables: { name: 'Ann' } },
      });
      expect(rendered.status).toBe(200);
      expect(rendered.body.subject).toBe('Welcome to Acme, Ann');
    } finally {
      await app.close();
    }
  });
});

// `herald webhooks ...` and `herald suppressions ...` as real subprocesses, in local mode (--tenant)
// and remote mode (--url/--api-key). The webhook secret is printed once, by create, and never again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app.ts';
import { HERALD_BIN, runCli, type CliResult } from '../support/cli.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

let app: TestApp;
let t: TenantFixture;
let receiver: WebhookReceiver;

function herald(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return runCli(args, {
    env: {
      DATABASE_URL: app.database.url,
      HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys,
      HERALD_HOME: app.dataDir,
      HERALD_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
      HERALD_URL: undefined,
      HERALD_API_KEY: undefined,
      ...env,
    },
  });
}
const remote = () => ({ HERALD_URL: app.url, HERALD_API_KEY: t.serviceKey });

beforeAll(async () => {
  app = await startTestApp({ config: { allowPrivateWebhookUrls: true }, webhooks: { pollMs: 10 } });
  t = await createTenantFixture(app, 'CliHooks');
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await app?.close();
});

describe('herald webhooks', () => {
  it(
    'creates locally (secret once), lists remotely, tests, shows deliveries and deletes',
    { timeout: 120_000 },
    async () => {
      const created = await herald([
        'webhooks',
        'create',
        '--tenant',
        t.tenantId,
        '--endpoint',
        `${receiver.url}/cli`,
        '--event-type',
        'delivery.failed,email.bounced',
        '--json',
      ]);
      expect(created.code).toBe(0);
      const hook = JSON.parse(created.stdout);
      expect(hook.secret).toMatch(/^whsec_/);
      expect(hook.event_types).toEqual(['delivery.failed', 'email.bounced']);

      const listed = await herald(['webhooks', 'list'], remote());
      expect(listed.code).toBe(0);
      expect(listed.stdout).toContain(hook.id);
      expect(listed.stdout).not.toContain(hook.secret);

      const tested = await herald(['webhooks', 'test', hook.id, '--json'], remote());
      expect(tested.code).toBe(0);
      const delivery = JSON.parse(tested.stdout);
      await receiver.waitFor((r) => r.headers['webhook-id'] === delivery.id);
      for (let i = 0; i < 100; i++) {
        const log = await app.request('GET', `/v1/webhooks/${hook.id}/deliveries?status=succeeded`, {
          token: t.serviceKey,
        });
        if (log.body.items.length === 1) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const log = await herald([
        'webhooks',
        'deliveries',
        hook.id,
        '--tenant',
        t.tenantId,
        '--status',
        'succeeded',
        '--json',
      ]);
      expect(JSON.parse(log.stdout)[0]).toMatchObject({
        id: delivery.id,
        event_type: 'webhook.test',
        status: 'succeeded',
        attempts: 1,
      });

      expect((await herald(['webhooks', 'delete', hook.id, '--tenant', t.tenantId])).code).toBe(2); // no terminal, no --yes
      expect((await herald(['webhooks', 'delete', hook.id, '--yes'], remote())).code).toBe(0);
      const again = await herald(['webhooks', 'delete', hook.id, '--yes', '--tenant', t.tenantId]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('not found');
    },
  );

  it(
    'get shows one endpoint without its secret, locally and remotely; an unknown id exits 1',
    { timeout: 120_000 },
    async () => {
      const created = await app.request('POST', '/v1/webhooks', {
        token: t.serviceKey,
        body: { url: `${receiver.url}/get`, event_types: ['inbox.read'], description: 'read receipts' },
      });
      expect(created.status).toBe(201);
      const { secret, ...hook } = created.body;
      const json = await herald(['webhooks', 'get', hook.id, '--json'], remote());
      expect(json.stderr).toBe('');
      expect(json.code).toBe(0);
      expect(JSON.parse(json.stdout)).toEqual(hook);
      const shown = await herald(['webhooks', 'get', hook.id, '--tenant', t.tenantId]);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(new RegExp(`url\\s+${receiver.url}/get`));
      expect(shown.stdout).toMatch(/event_types\s+\["inbox\.read"\]/);
      for (const out of [json.stdout, shown.stdout]) expect(out).not.toContain(secret);
      const unknown = await herald(['webhooks', 'get', '0190f5e3-0000-7000-8000-000000000001', '--tenant', t.tenantId]);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('Webhook not found');
    },
  );

  it(
    'rotate-secret prints a new secret once, which signs from then on; it needs --yes',
    { timeout: 120_000 },
    async () => {
      const created = await app.request('POST', '/v1/webhooks', {
        token: t.serviceKey,
        body: { url: `${receiver.url}/rotate`, event_types: ['inbox.read'] },
      });
      const id = created.body.id;
      expect((await herald(['webhooks', 'rotate-secret', id, '--tenant', t.tenantId])).code).toBe(2);
      const rotated = await herald(['webhooks', 'rotate-secret', id, '--yes', '--json'], remote());
      expect(rotated.stderr).toBe('');
      expect(rotated.code).toBe(0);
      const { secret } = JSON.parse(rotated.stdout);
      expect(secret).toMatch(/^whsec_/);
      expect(secret).not.toBe(created.body.secret);
      const tested = JSON.parse((await herald(['webhooks', 'test', id, '--json'], remote())).stdout);
      const request = await receiver.waitFor((r) => r.headers['webhook-id'] === tested.id);
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
      const signed = `${request.headers['webhook-id']}.${request.headers['webhook-timestamp']}.${request.body}`;
      expect(request.headers['webhook-signature']).toBe(
        `v1,${createHmac('sha256', key).update(signed).digest('base64')}`,
      );
      const shown = await herald(['webhooks', 'rotate-secret', id, '--yes', '--tenant', t.tenantId]);
      expect(shown.stdout).toMatch(/^New signing secret of webhook .+: whsec_/);
    },
  );

  it(
    'names the problem of bad input: exit 1 when the API refuses it, 2 when the CLI does',
    { timeout: 120_000 },
    async () => {
      const bad = await herald([
        'webhooks',
        'create',
        '--tenant',
        t.tenantId,
        '--endpoint',
        'ftp://x',
        '--event-type',
        'delivery.sent',
      ]);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('url');
      const badType = await herald(
        ['webhooks', 'create', '--endpoint', `${receiver.url}/x`, '--event-type', 'nope'],
        remote(),
      );
      expect(badType.code).toBe(1);
      expect(badType.stderr).toContain('event_types');
      expect((await herald(['webhooks', 'list', '--tenant', 'not-a-uuid'])).code).toBe(2);
      expect((await herald(['webhooks', 'deliveries', 'x', '--tenant', t.tenantId, '--status', 'lost'])).code).toBe(1);
    },
  );
});

describe('herald suppressions', () => {
  it('adds, lists and removes, locally and remotely', { timeout: 120_000 }, async () => {
    expect((await herald(['suppressions', 'add', 'Ann@Example.test', '--tenant', t.tenantId])).stdout).toContain(
      'ann@example.test is suppressed (manual)',
    );
    const listed = await herald(['suppressions', 'list', '--json'], remote());
    expect(JSON.parse(listed.stdout)).toEqual([
      { email: 'ann@example.test', reason: 'manual', created_at: expect.any(String) },
    ]);
    expect((await herald(['suppressions', 'remove', 'ann@example.test', '--yes'], remote())).code).toBe(0);
    expect(JSON.parse((await herald(['suppressions', 'list', '--tenant', t.tenantId, '--json'])).stdout)).toEqual([]);
    const missing = await herald(['suppressions', 'remove', 'ann@example.test', '--yes', '--tenant', t.tenantId]);
    expect(missing.code).toBe(1);
    expect((await herald(['suppressions', 'add', 'not-an-address', '--tenant', t.tenantId])).code).toBe(1); // 422
  });
});

describe('herald start --role inbound', () => {
  it('runs only the bounce listener, which refuses mail for other domains', { timeout: 120_000 }, async () => {
    const { spawn } = await import('node:child_process');
    const { createServer } = await import('node:net');
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as { port: number };
        probe.close(() => resolve(free));
      });
    });
    const child = spawn(HERALD_BIN, ['start', '--role', 'inbound'], {
      env: {
        ...process.env,
        DATABASE_URL: app.database.url,
        HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys,
        HERALD_HOME: app.dataDir,
        HERALD_INBOUND_SMTP: `127.0.0.1:${port}`,
        HERALD_BOUNCE_DOMAIN: 'bounces.cli.test',
        HERALD_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let out = '';
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d) => {
          out += d;
          if (out.includes('Bounce SMTP listening')) resolve();
        });
        child.on('exit', (code) => reject(new Error(`exited with ${code}: ${out}`)));
      });
      expect(out).not.toContain('Herald listening');
      const nodemailer = (await import('nodemailer')).default;
      const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
      await expect(
        transport.sendMail({
          envelope: { from: 'a@example.test', to: 'someone@example.com' },
          raw: 'Subject: x\r\n\r\nx',
        }),
      ).rejects.toMatchObject({ responseCode: 550 });
      transport.close();
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    expect(child.exitCode).toBe(0);
  });
});

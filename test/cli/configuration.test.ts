// herald export / herald apply (the real bin/herald): YAML round trips locally and remotely, the plan
// printed, a second apply that changes nothing, --dry-run, --prune, and a malformed file named by path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { query } from '../../server/base/db/sql.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { runCli } from '../support/cli.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';

// Each command starts a Node process and opens the database: slow on a busy machine.
const CLI_TIMEOUT = 240_000;

let app: TestApp;
let acme: TenantFixture;
let env: Record<string, string>;
let dir: string;

const YAML = `version: 1
notification_types:
  - key: order_shipped
    name: Order shipped
    variables:
      - name: order_id
        required: true
brands:
  - key: default
    values:
      name: Acme
      colour: "#112233"
  - key: shop
    values:
      name: Acme Shop
email_templates:
  - notification_type_key: order_shipped
    brand_key: shop
    subject: "Order {{ order_id }}"
    content: "<p>Shipped {{ order_id }}</p>"
inbox_templates:
  - notification_type_key: order_shipped
    title: "Order {{ order_id }} shipped"
    content: Track it
`;

beforeAll(async () => {
  // Webhook endpoints of these tests point at loopback, which no delivery reaches.
  app = await startTestApp({ config: { allowPrivateWebhookUrls: true } });
  acme = await createTenantFixture(app, 'Acme');
  env = {
    HERALD_HOME: app.dataDir,
    DATABASE_URL: app.database.url,
    HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys!,
    HERALD_LOG_LEVEL: 'error',
    HERALD_URL: '',
    HERALD_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
  };
  dir = mkdtempSync(join(tmpdir(), 'herald-config-'));
});
afterAll(async () => {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

const herald = (args: string[], extra: Record<string, string> = {}) =>
  runCli(args, { env: { ...env, ...extra }, timeoutMs: CLI_TIMEOUT });
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('herald apply and herald export', () => {
  it('applies a file locally (plan printed), a second time changes nothing, and export -> apply on a fresh tenant -> export is identical', async () => {
    const path = file('herald.yaml', YAML);
    const dry = await herald(['apply', '-f', path, '--tenant', acme.tenantId, '--dry-run']);
    expect(dry.stderr).toBe('');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('+ create notification_types order_shipped');
    expect(dry.stdout).toContain('Dry run: nothing changed.');
    expect((await app.request('GET', '/v1/notification-types', { token: acme.serviceKey })).body).toEqual([]);

    const first = await herald(['apply', '-f', path, '--tenant', acme.tenantId]);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('+ create notification_types order_shipped');
    expect(first.stdout).toContain('~ update brands default (values)');
    expect(first.stdout).toContain('+ create email_templates order_shipped/shop/en');
    expect(first.stdout).toContain('Plan: 4 to create, 1 to update, 0 to delete. Applied.');
    const second = await herald(['apply', '-f', path, '--tenant', acme.tenantId]);
    expect(second.code).toBe(0);
    expect(second.stdout.trim()).toBe('no changes');

    const exported = await herald(['export', '--tenant', acme.tenantId]);
    expect(exported.code).toBe(0);
    expect(exported.stdout).toMatch(/^# Herald configuration/);
    expect(exported.stdout).toContain('key: order_shipped');
    const exportPath = file('exported.yaml', exported.stdout);

    const beta = await createTenantFixture(app, 'Beta');
    const applied = await herald(['apply', '-f', exportPath, '--tenant', beta.tenantId, '--json']);
    expect(applied.code).toBe(0);
    expect(JSON.parse(applied.stdout).applied).toBe(true);
    const again = await herald(['export', '--tenant', beta.tenantId]);
    expect(again.stdout).toBe(exported.stdout);
  });

  it('works remotely with a service key, and --prune deletes what the file leaves out', async () => {
    const gamma = await createTenantFixture(app, 'Gamma');
    const remote = { HERALD_URL: app.url, HERALD_API_KEY: gamma.serviceKey };
    const path = file('remote.yaml', YAML);
    const first = await herald(['apply', '-f', path], remote);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('Applied.');
    expect((await herald(['apply', '-f', path], remote)).stdout.trim()).toBe('no changes');

    const slim = file('slim.yaml', YAML.split('email_templates:')[0]!);
    const kept = await herald(['apply', '-f', slim], remote);
    expect(kept.stdout.trim()).toBe('no changes');
    const pruned = await herald(['apply', '-f', slim, '--prune'], remote);
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toContain('- delete inbox_templates order_shipped/default/en');
    expect(pruned.stdout).toContain('- delete email_templates order_shipped/shop/en');
    const exported = await herald(['export', '--json'], remote);
    expect(exported.code).toBe(0);
    const document = JSON.parse(exported.stdout);
    expect(document.email_templates).toEqual([]);
    expect(document.brands.map((b: { key: string }) => b.key)).toEqual(['default', 'shop']);
  });

  it(
    'exports webhook endpoints without secrets; apply creates them (a new secret), updates them (the secret kept), prunes them',
    async () => {
      const delta = await createTenantFixture(app, 'Delta');
      const url = 'http://127.0.0.1:9/herald';
      const created = await app.request('POST', '/v1/webhooks', {
        token: delta.serviceKey,
        body: { url, event_types: ['inbox.read', 'delivery.failed'], description: 'ops' },
      });
      expect(created.status).toBe(201);
      const exported = await herald(['export', '--tenant', delta.tenantId]);
      expect(exported.code, exported.stderr).toBe(0);
      expect(exported.stdout).toContain(`webhooks:\n  - url: ${url}\n`);
      expect(exported.stdout).not.toContain(created.body.secret);
      expect(exported.stdout).not.toContain('whsec_');
      const exportPath = file('webhooks.yaml', exported.stdout);
      expect((await herald(['apply', '-f', exportPath, '--tenant', delta.tenantId])).stdout.trim()).toBe('no changes');

      const epsilon = await createTenantFixture(app, 'Epsilon');
      const remote = { HERALD_URL: app.url, HERALD_API_KEY: epsilon.serviceKey };
      const applied = await herald(['apply', '-f', exportPath], remote);
      expect(applied.code, applied.stderr).toBe(0);
      expect(applied.stdout).toContain(`+ create webhooks ${url}`);
      expect(applied.stdout).not.toContain('whsec_');
      const [hook] = (await app.request('GET', '/v1/webhooks', { token: epsilon.serviceKey })).body.items;
      expect(hook).toMatchObject({
        url,
        event_types: ['delivery.failed', 'inbox.read'],
        description: 'ops',
        enabled: true,
      });
      expect((await herald(['export'], remote)).stdout).toBe(exported.stdout);

      const secretOf = async (id: string) =>
        (
          await query<{ secret_ciphertext: string }>(
            app.runtime.orm.em.fork(),
            `SELECT secret_ciphertext FROM webhook_endpoints WHERE id = $1`,
            [id],
          )
        )[0]?.secret_ciphertext;
      const secret = await secretOf(hook.id);
      expect(secret).toEqual(expect.any(String));
      const changed = file(
        'webhooks-changed.yaml',
        exported.stdout.replace('description: ops', 'description: on call'),
      );
      const updated = await herald(['apply', '-f', changed], remote);
      expect(updated.code, updated.stderr).toBe(0);
      expect(updated.stdout).toContain(`~ update webhooks ${url} (description)`);
      const after = (await app.request('GET', `/v1/webhooks/${hook.id}`, { token: epsilon.serviceKey })).body;
      expect(after.description).toBe('on call');
      expect(await secretOf(hook.id)).toBe(secret);

      const pruned = await herald(['apply', '-f', file('no-webhooks.yaml', 'version: 1\n'), '--prune'], remote);
      expect(pruned.code, pruned.stderr).toBe(0);
      expect(pruned.stdout).toContain(`- delete webhooks ${url}`);
      expect((await app.request('GET', '/v1/webhooks', { token: epsilon.serviceKey })).body.items).toEqual([]);
    },
    CLI_TIMEOUT,
  );

  it('names the bad path (and its line) of a malformed file (exit 2) or of a refused value (exit 1), and changes nothing', async () => {
    const bad = file(
      'bad.yaml',
      YAML.replace('colour: "#112233"', 'colour: orange').replace(
        '    name: Order shipped\n',
        '    name: Order shipped\n    colour: red\n',
      ),
    );
    const res = await herald(['apply', '-f', bad, '--tenant', acme.tenantId]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/bad\.yaml: brands\[0\]\.values\.colour \(line 13\): must be a hex colour/);
    expect(res.stderr).toMatch(/bad\.yaml: notification_types\[0\] \(line \d+\): Unrecognized key/);
    const broken = await herald(['apply', '-f', file('broken.yaml', 'brands: [\n'), '--tenant', acme.tenantId]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/broken\.yaml.*not valid YAML/);
    const missing = await herald(['apply', '--tenant', acme.tenantId]);
    expect(missing.code).toBe(2);
    // A value only the service can judge (a template of a type that does not exist): Herald refused it (exit 1);
    // named by its entry, remotely too.
    const orphan = file(
      'orphan.yaml',
      'email_templates:\n  - notification_type_key: nope\n    subject: s\n    content: c\n',
    );
    for (const target of [
      ['--tenant', acme.tenantId],
      ['--url', app.url, '--api-key', acme.serviceKey],
    ]) {
      const refused = await herald(['apply', '-f', orphan, ...target]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(
        /orphan\.yaml: email_templates\.0\.notification_type_key: nope\/default\/en: no notification type nope/,
      );
    }
  });
});

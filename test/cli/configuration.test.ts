// herald export / herald apply (the real bin/herald): YAML round trips locally and remotely, the plan
// printed, a second apply that changes nothing, --dry-run, --prune, and a malformed file named by path.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  env = {
    HERALD_HOME: app.dataDir,
    DATABASE_URL: app.database.url,
    HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys!,
    HERALD_LOG_LEVEL: 'error',
    HERALD_URL: '',
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

  it('names the bad path (and its line) of a malformed file, exits 2, and changes nothing', async () => {
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
    // A value only the service can judge (a template of a type that does not exist): named by its entry, remotely too.
    const orphan = file(
      'orphan.yaml',
      'email_templates:\n  - notification_type_key: nope\n    subject: s\n    content: c\n',
    );
    for (const target of [
      ['--tenant', acme.tenantId],
      ['--url', app.url, '--api-key', acme.serviceKey],
    ]) {
      const refused = await herald(['apply', '-f', orphan, ...target]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(
        /orphan\.yaml: email_templates\.0\.notification_type_key: nope\/default\/en: no notification type nope/,
      );
    }
  });
});

// herald types|templates|brands list|get (the real bin/herald), locally and remotely: the same records
// the API answers, templates of every kind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { runCli } from '../support/cli.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';

const CLI_TIMEOUT = 240_000;

let app: TestApp;
let acme: TenantFixture;
let env: Record<string, string>;
let remote: Record<string, string>;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  await createTenantFixture(app, 'Other');
  env = {
    HERALD_HOME: app.dataDir,
    DATABASE_URL: app.database.url,
    HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys!,
    HERALD_LOG_LEVEL: 'error',
    HERALD_URL: '',
  };
  remote = { HERALD_URL: app.url, HERALD_API_KEY: acme.serviceKey };
  const res = await app.request('POST', '/v1/configuration/apply', {
    token: acme.serviceKey,
    body: {
      document: {
        notification_types: [
          { key: 'order_shipped', name: 'Order shipped', variables: [{ name: 'order_id', required: true }] },
        ],
        brands: [{ key: 'shop', values: { name: 'Acme Shop' }, sender: { from_email: 'shop@acme.example' } }],
        email_templates: [
          { notification_type_key: 'order_shipped', subject: 'Order {{ order_id }}', content: '<p>{{ order_id }}</p>' },
        ],
        inbox_templates: [
          {
            notification_type_key: 'order_shipped',
            brand_key: 'shop',
            title: 'Shipped {{ order_id }}',
            content: 'Track it',
          },
        ],
        sms_templates: [{ notification_type_key: 'order_shipped', content: 'Order {{ order_id }} is on its way' }],
        chat_templates: [
          { notification_type_key: 'order_shipped', brand_key: 'shop', content: '*Shipped* {{ order_id }}' },
        ],
        http_templates: [
          { notification_type_key: 'order_shipped', body: { event: 'shipped', order: '{{ order_id }}' } },
        ],
      },
    },
  });
  expect(res.status).toBe(200);
});
afterAll(async () => {
  await app?.close();
});

const herald = (args: string[], extra: Record<string, string> = {}) =>
  runCli(args, { env: { ...env, ...extra }, timeoutMs: CLI_TIMEOUT });
const api = async (path: string) => (await app.request('GET', path, { token: acme.serviceKey })).body;

describe('herald types, templates and brands (read commands)', () => {
  it('lists and shows notification types locally and remotely, as the API does', async () => {
    const local = await herald(['types', 'list', '--tenant', acme.tenantId, '--json']);
    expect(local.code, local.stderr).toBe(0);
    expect(JSON.parse(local.stdout)).toEqual(await api('/v1/notification-types'));
    const table = await herald(['types', 'list', '--tenant', acme.tenantId]);
    expect(table.stdout).toMatch(/^KEY\s+NAME\s+CHANNELS/);
    expect(table.stdout).toMatch(/order_shipped\s+Order shipped\s+inbox,email\s+true\s+order_id\*\s+-/);
    const got = await herald(['types', 'get', 'order_shipped', '--json'], remote);
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout)).toEqual(await api('/v1/notification-types/order_shipped'));
    const missing = await herald(['types', 'get', 'nope', '--tenant', acme.tenantId]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not found');
    const remoteMissing = await herald(['types', 'get', 'nope'], remote);
    expect(remoteMissing.code).toBe(1);
    expect(remoteMissing.stderr).toContain('HTTP 404');
  });

  it('lists and shows templates of both kinds', async () => {
    const local = await herald(['templates', 'list', '--tenant', acme.tenantId, '--json']);
    expect(local.code, local.stderr).toBe(0);
    const templates = JSON.parse(local.stdout);
    const email = (await api('/v1/email-templates'))[0];
    const inbox = (await api('/v1/inbox-templates'))[0];
    expect(templates).toEqual([
      { ...email, kind: 'email' },
      { ...inbox, kind: 'inbox' },
    ]);
    const filtered = await herald(['templates', 'list', '--kind', 'inbox', '--brand', 'shop', '--json'], remote);
    expect(JSON.parse(filtered.stdout)).toEqual([{ ...inbox, kind: 'inbox' }]);
    const none = await herald(['templates', 'list', '--brand', 'default', '--kind', 'inbox'], remote);
    expect(none.stdout.trim()).toBe('(none)');
    const got = await herald(['templates', 'get', inbox.id, '--json'], remote);
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout)).toEqual({ ...inbox, kind: 'inbox' });
    const shown = await herald(['templates', 'get', email.id, '--tenant', acme.tenantId]);
    expect(shown.stdout).toMatch(/subject\s+Order \{\{ order_id \}\}/);
    const missing = await herald([
      'templates',
      'get',
      '0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
      '--tenant',
      acme.tenantId,
    ]);
    expect(missing.code).toBe(1);
    expect((await herald(['templates', 'get', 'not-an-id', '--tenant', acme.tenantId])).code).toBe(2);
  });

  it('lists and shows SMS, chat and HTTP templates with --kind, and says where to look without it', async () => {
    const sms = (await api('/v1/sms-templates'))[0];
    const chat = (await api('/v1/chat-templates'))[0];
    const http = (await api('/v1/http-templates'))[0];
    for (const [kind, template] of [
      ['sms', sms],
      ['chat', chat],
      ['http', http],
    ] as const) {
      const listed = await herald(['templates', 'list', '--kind', kind, '--json'], remote);
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout)).toEqual([{ ...template, kind }]);
      const got = await herald(['templates', 'get', template.id, '--kind', kind, '--json'], remote);
      expect(got.code, got.stderr).toBe(0);
      expect(JSON.parse(got.stdout)).toEqual({ ...template, kind });
    }
    const table = await herald(['templates', 'list', '--kind', 'sms'], remote);
    expect(table.stdout).toMatch(/sms\s+order_shipped\s+default\s+en\s+Order \{\{ order_id \}\} is on its way/);
    const bodies = await herald(['templates', 'list', '--kind', 'http', '--tenant', acme.tenantId]);
    expect(bodies.stdout).toContain('{"event":"shipped","order":"{{ order_id }}"}');
    const filtered = await herald(['templates', 'list', '--kind', 'chat', '--brand', 'default', '--json'], remote);
    expect(JSON.parse(filtered.stdout)).toEqual([]);

    // Without --kind: email and inbox, as before; an SMS template's id points at --kind.
    const both = await herald(['templates', 'list', '--json'], remote);
    expect(JSON.parse(both.stdout).map((t: { kind: string }) => t.kind)).toEqual(['email', 'inbox']);
    const unkinded = await herald(['templates', 'get', sms.id], remote);
    expect(unkinded.code).toBe(1);
    expect(unkinded.stderr).toContain('--kind sms|chat|http');
    const wrongKind = await herald(['templates', 'get', sms.id, '--kind', 'chat'], remote);
    expect(wrongKind.code).toBe(1);
    expect(wrongKind.stderr).toContain(`no chat template ${sms.id}`);
    expect((await herald(['templates', 'list', '--kind', 'fax'], remote)).code).toBe(2);
  }, 240_000);

  it('lists and shows brands', async () => {
    const local = await herald(['brands', 'list', '--tenant', acme.tenantId, '--json']);
    expect(local.code, local.stderr).toBe(0);
    expect(JSON.parse(local.stdout)).toEqual(await api('/v1/brandings'));
    const table = await herald(['brands', 'list'], remote);
    expect(table.stdout).toMatch(/default\s+Acme\s+-\s+true/);
    expect(table.stdout).toMatch(/shop\s+Acme Shop\s+<shop@acme\.example>\s+false/);
    const got = await herald(['brands', 'get', 'shop', '--tenant', acme.tenantId, '--json']);
    expect(JSON.parse(got.stdout)).toEqual(await api('/v1/brandings/shop'));
  });

  it('asks for --tenant when the install has several tenants', async () => {
    const res = await herald(['brands', 'list']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('several tenants');
  });
});

// herald api-keys (local admin, the real bin/herald as a subprocess): a key issued on the host works
// against the API at once, is listed without its secret, and stops working when revoked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../../server/base/db/sql.ts';
import { cliActor } from '../../server/resources/audit-log.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { runCli } from '../support/cli.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';

// Each command starts a Node process and opens the database: slow on a busy machine.
const CLI_TIMEOUT = 180_000;

let app: TestApp;
let acme: TenantFixture;
let env: Record<string, string>;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  env = {
    HERALD_HOME: app.dataDir,
    DATABASE_URL: app.database.url,
    HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys!,
    HERALD_LOG_LEVEL: 'error',
  };
});
afterAll(async () => {
  await app?.close();
});

const herald = (args: string[]) => runCli(args, { env });

describe('herald api-keys', () => {
  it(
    'issues a key (printed once) that the API accepts, lists it, and revokes it',
    async () => {
      const issued = await herald(['api-keys', 'issue', '--tenant', acme.tenantId, '--name', 'bootstrap', '--json']);
      expect(issued.stderr).toBe('');
      expect(issued.code).toBe(0);
      const key = JSON.parse(issued.stdout);
      expect(key).toMatchObject({
        name: 'bootstrap',
        key: expect.stringMatching(/^sk_[A-Za-z0-9_-]{43}$/),
        prefix: expect.any(String),
      });
      const api = await app.request('GET', '/v1/api-keys', { token: key.key });
      expect(api.status).toBe(200);
      expect(api.body.map((k: { id: string }) => k.id)).toContain(key.id);

      const listed = await herald(['api-keys', 'list', '--tenant', acme.tenantId, '--json']);
      expect(listed.code).toBe(0);
      const keys = JSON.parse(listed.stdout);
      expect(keys.find((k: { id: string }) => k.id === key.id)).toEqual({
        id: key.id,
        name: 'bootstrap',
        prefix: key.prefix,
        created_at: key.created_at,
        last_used_at: expect.any(String),
      });
      expect(listed.stdout).not.toContain(key.key);

      const table = await herald(['api-keys', 'list', '--tenant', acme.tenantId]);
      expect(table.stdout).toMatch(/^ID\s+NAME\s+PREFIX/);
      expect(table.stdout).toContain(key.prefix);

      const revoked = await herald(['api-keys', 'revoke', key.id, '--tenant', acme.tenantId, '--yes']);
      expect(revoked.code).toBe(0);
      expect(revoked.stdout).toContain(`Revoked service key ${key.id}`);
      expect((await app.request('GET', '/v1/api-keys', { token: key.key })).status).toBe(401);

      const again = await herald(['api-keys', 'revoke', key.id, '--tenant', acme.tenantId, '--yes']);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('no live service key');

      // The routes audit what the CLI did, as the host's account.
      const audit = await query(
        app.runtime.orm.em.fork(),
        `SELECT action, actor_kind, actor_id, target_id FROM audit_log WHERE tenant_id = $1 AND target_id = $2 ORDER BY at`,
        [acme.tenantId, key.id],
      );
      expect(audit).toEqual([
        { action: 'api_key.create', actor_kind: 'cli', actor_id: cliActor().id, target_id: key.id },
        { action: 'api_key.delete', actor_kind: 'cli', actor_id: cliActor().id, target_id: key.id },
      ]);
    },
    CLI_TIMEOUT,
  );

  it(
    'prints the key alone on stdout in human mode',
    async () => {
      const issued = await herald(['api-keys', 'issue', '--tenant', acme.tenantId]);
      expect(issued.code).toBe(0);
      expect(issued.stdout.trim()).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
      expect(issued.stderr).toContain('not shown again');
    },
    CLI_TIMEOUT,
  );

  it(
    'refuses to revoke without --yes when stdin is not a terminal (exit 2), and keeps the key',
    async () => {
      const res = await herald(['api-keys', 'revoke', acme.apiKeyId, '--tenant', acme.tenantId]);
      expect(res.code).toBe(2);
      expect(res.stderr).toContain('--yes');
      expect((await app.request('GET', '/v1/api-keys', { token: acme.serviceKey })).status).toBe(200);
    },
    CLI_TIMEOUT,
  );

  it(
    'lists and revokes without --tenant on an install of one tenant, as issue does',
    async () => {
      const issued = JSON.parse((await herald(['api-keys', 'issue', '--name', 'single', '--json'])).stdout);
      const listed = await herald(['api-keys', 'list', '--json']);
      expect(listed.stderr).toBe('');
      expect(listed.code).toBe(0);
      expect(JSON.parse(listed.stdout).map((k: { id: string }) => k.id)).toContain(issued.id);
      const revoked = await herald(['api-keys', 'revoke', issued.id, '--yes']);
      expect(revoked.stderr).toBe('');
      expect(revoked.code).toBe(0);
      expect((await app.request('GET', '/v1/api-keys', { token: issued.key })).status).toBe(401);
    },
    CLI_TIMEOUT,
  );

  it(
    'exits 2 for a malformed tenant id or none on an install of several, and 1 for an unknown tenant',
    async () => {
      await createTenantFixture(app, 'Second');
      const [malformed, unknown, missing, missingRevoke] = await Promise.all([
        herald(['api-keys', 'list', '--tenant', 'acme']),
        herald(['api-keys', 'issue', '--tenant', '0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6']),
        herald(['api-keys', 'list']),
        herald(['api-keys', 'revoke', acme.apiKeyId, '--yes']),
      ]);
      expect(malformed.code).toBe(2);
      expect(malformed.stderr).toContain('--tenant must be a tenant id');
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('no tenant with id');
      for (const res of [missing, missingRevoke]) {
        expect(res.code).toBe(2);
        expect(res.stderr).toContain('the install has several tenants: give --tenant <id>');
      }
      expect((await app.request('GET', '/v1/api-keys', { token: acme.serviceKey })).status).toBe(200);
    },
    CLI_TIMEOUT,
  );
});

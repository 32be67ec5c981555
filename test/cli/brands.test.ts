// herald brands limit (local admin, the real bin/herald): the plan's brand cap as the API enforces it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
const createBrand = (key: string) => app.request('POST', '/v1/brandings', { token: acme.serviceKey, body: { key } });

describe('herald brands limit', () => {
  it(
    'shows the default cap, lowers it (the API then answers 402), raises it and resets it; --tenant defaults to the only one',
    async () => {
      const shown = await herald(['brands', 'limit', '--tenant', acme.tenantId, '--json']);
      expect(shown.code).toBe(0);
      expect(JSON.parse(shown.stdout)).toEqual({ tenant_id: acme.tenantId, limit: 10, default: true, brands: 1 });

      const lowered = await herald(['brands', 'limit', '--tenant', acme.tenantId, '2']);
      expect(lowered.code, lowered.stderr).toBe(0);
      expect(lowered.stdout).toContain('Brand cap of tenant');
      expect(lowered.stdout).toContain(': 2;');
      expect((await createBrand('second')).status).toBe(201);
      expect((await createBrand('third')).status).toBe(402);

      const raised = await herald(['brands', 'limit', '--tenant', acme.tenantId, '3', '--json']);
      expect(JSON.parse(raised.stdout)).toEqual({ tenant_id: acme.tenantId, limit: 3, default: false, brands: 2 });
      expect((await createBrand('third')).status).toBe(201);

      const reset = await herald(['brands', 'limit', '--tenant', acme.tenantId, '--reset', '--json']);
      expect(JSON.parse(reset.stdout)).toEqual({ tenant_id: acme.tenantId, limit: 10, default: true, brands: 3 });

      // The install's only tenant is the default, as in single mode.
      const implied = await herald(['brands', 'limit', '--json']);
      expect(implied.code, implied.stderr).toBe(0);
      expect(JSON.parse(implied.stdout)).toMatchObject({ tenant_id: acme.tenantId, limit: 10 });
    },
    CLI_TIMEOUT,
  );

  it(
    'exits 2 for a bad number, a number with --reset, or a malformed tenant; 1 for an unknown tenant',
    async () => {
      const [negative, word, both, malformed, unknown] = await Promise.all([
        herald(['brands', 'limit', '--tenant', acme.tenantId, '-1']),
        herald(['brands', 'limit', '--tenant', acme.tenantId, 'ten']),
        herald(['brands', 'limit', '--tenant', acme.tenantId, '5', '--reset']),
        herald(['brands', 'limit', '--tenant', 'nope']),
        herald(['brands', 'limit', '--tenant', '0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6']),
      ]);
      for (const usage of [negative, word, both, malformed]) expect(usage.code).toBe(2);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('no tenant with id');
    },
    CLI_TIMEOUT,
  );
});

// herald tenants / herald users as an operator runs them: the real bin/herald against a data directory
// and a real database, with --json output and meaningful exit codes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { generateKey } from '../../server/base/crypto/keyring.ts';
import { verifyPassword } from '../../server/base/auth/passwords.ts';
import { Client } from 'pg';

let db: TestDatabase;
let dataDir: string;
let env: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = mkdtempSync(join(tmpdir(), 'herald-cli-'));
  env = {
    DATABASE_URL: db.url,
    HERALD_ENCRYPTION_KEYS: `k1:${generateKey()}`,
    HERALD_MODE: 'multi',
    HERALD_LOG_LEVEL: 'warn',
  };
});
afterAll(async () => {
  await db?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const herald = (args: string[], extraEnv: Record<string, string> = {}) =>
  runCli([...args, '--data-dir', dataDir], { env: { ...env, ...extraEnv } });

async function sql<T>(text: string, params: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: db.url });
  await client.connect();
  try {
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end();
  }
}

// Each CLI call starts Node and opens the database (~2 s idle, several times that on a loaded machine).
describe('herald users and herald tenants', { timeout: 180_000 }, () => {
  let tenantId: string;
  const email = 'ops@cli.example.test';

  it('users create makes a verified user and prints a generated password once', async () => {
    const res = await herald(['users', 'create', 'OPS@cli.example.test', '--verified', '--json']);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out).toMatchObject({ email, email_verified: true, generated_password: expect.any(String) });
    const [row] = await sql<{ password_hash: string }>(`SELECT password_hash FROM users WHERE email = $1`, [email]);
    expect(row!.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await verifyPassword(row!.password_hash, out.generated_password)).toBe(true);
  });

  it('users create refuses a duplicate (exit 1) and a bad email (exit 2)', async () => {
    expect((await herald(['users', 'create', email])).code).toBe(1);
    expect((await herald(['users', 'create', 'not-an-email'])).code).toBe(2);
  });

  it('tenants create makes a tenant with the owner (default) and its default brand', async () => {
    const res = await herald(['tenants', 'create', '  Acme CLI  ', '--owner', email, '--json']);
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out).toMatchObject({ id: expect.any(String), name: 'Acme CLI', archived: false });
    tenantId = out.id;
    expect(await sql(`SELECT role, is_default FROM memberships WHERE tenant_id = $1`, [tenantId])).toEqual([
      { role: 'owner', is_default: true },
    ]);
    expect(await sql(`SELECT key FROM brands WHERE tenant_id = $1 AND is_default`, [tenantId])).toEqual([
      { key: 'default' },
    ]);
    expect((await herald(['tenants', 'create', 'X', '--owner', 'nobody@cli.example.test'])).code).toBe(1);
  });

  it('tenants rename, archive and unarchive; list shows the state', async () => {
    expect(JSON.parse((await herald(['tenants', 'rename', tenantId, 'Acme Renamed', '--json'])).stdout).name).toBe(
      'Acme Renamed',
    );
    expect(JSON.parse((await herald(['tenants', 'archive', tenantId, '--json'])).stdout).archived).toBe(true);
    const list = JSON.parse((await herald(['tenants', 'list', '--json'])).stdout);
    expect(list).toEqual([expect.objectContaining({ id: tenantId, name: 'Acme Renamed', archived: true })]);
    expect(JSON.parse((await herald(['tenants', 'unarchive', tenantId, '--json'])).stdout).archived).toBe(false);
    expect((await herald(['tenants', 'archive', '0190f5e2-0000-7000-8000-000000000000'])).code).toBe(1);
  });

  it('tenants limits lists, sets and unsets plan caps and rate limits', async () => {
    const set = await herald([
      'tenants',
      'limits',
      tenantId,
      '--set',
      'brands=25',
      '--set',
      'rate:trigger=600',
      '--json',
    ]);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toEqual({ tenant_id: tenantId, limits: { brands: 25, 'rate:trigger': 600 } });
    const unset = await herald(['tenants', 'limits', tenantId, '--unset', 'rate:trigger', '--json']);
    expect(JSON.parse(unset.stdout).limits).toEqual({ brands: 25 });
  });

  it('users list, reset-password and verify', async () => {
    expect(
      (
        await herald([
          'users',
          'create',
          'dev@cli.example.test',
          '--password',
          'a fine passphrase',
          '--tenant',
          tenantId,
        ])
      ).code,
    ).toBe(0);
    const list = JSON.parse((await herald(['users', 'list', '--json'])).stdout);
    expect(list).toEqual([
      expect.objectContaining({ email, email_verified: true, tenants: 1 }),
      expect.objectContaining({ email: 'dev@cli.example.test', email_verified: false, tenants: 1 }),
    ]);
    const reset = await herald([
      'users',
      'reset-password',
      'dev@cli.example.test',
      '--password',
      'another passphrase',
      '--json',
    ]);
    expect(reset.code).toBe(0);
    const [row] = await sql<{ password_hash: string }>(
      `SELECT password_hash FROM users WHERE email = 'dev@cli.example.test'`,
    );
    expect(await verifyPassword(row!.password_hash, 'another passphrase')).toBe(true);
    const verify = await herald(['users', 'verify', 'dev@cli.example.test', '--json']);
    expect(JSON.parse(verify.stdout)).toMatchObject({ email: 'dev@cli.example.test', email_verified: true });
  });

  it('in single mode, tenants create refuses a second tenant', async () => {
    const res = await herald(['tenants', 'create', 'Second', '--owner', email], { HERALD_MODE: 'single' });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('single-tenant');
  });
});

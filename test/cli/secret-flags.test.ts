// Secrets reach init and users from a file or stdin: --owner-password-file, --smtp-url-file and
// --password-file. The older flags (--owner-password, --smtp-url with a password, --password) still
// work, warn on stderr naming the option that replaces them, and never echo the secret; an empty file
// is a usage error (exit 2). The real bin/herald against a real database, as an operator runs it.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { runCli } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { runTempDir, testTempDir } from '../support/tmp.ts';
import { OPERATOR_ENV } from '../support/operator-shell.ts';
import { generateKey } from '../../server/base/crypto/keyring.ts';
import { verifyPassword } from '../../server/base/auth/passwords.ts';

const ENV = { ...OPERATOR_ENV, HERALD_LOG_LEVEL: 'warn' };

const marker = (what: string) => `${what}-${Math.random().toString(36).slice(2, 10)}-secret`;

async function passwordHashOf(url: string, email: string): Promise<string> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE email = $1', [
      email,
    ]);
    expect(rows).toHaveLength(1);
    return rows[0]!.password_hash;
  } finally {
    await client.end();
  }
}

function secretFile(content: string): string {
  const file = join(testTempDir('herald-secret-'), 'secret');
  writeFileSync(file, content, { mode: 0o600 });
  return file;
}

describe('herald init secrets', { timeout: 180_000 }, () => {
  async function init(extra: string[], input?: string) {
    const database = await createTestDatabase();
    onTestFinished(() => database.drop());
    const dataDir = join(testTempDir('herald-init-secrets-'), 'data');
    const args = ['init', '--yes', '--data-dir', dataDir, '--database-url', database.url, '--tenant', 'Acme'];
    const result = await runCli([...args, '--owner-email', 'owner@acme.test', ...extra], { env: ENV, input });
    return { ...result, dataDir, database };
  }

  it('reads the owner password from stdin and the SMTP URL from a file, without a warning', async () => {
    const password = marker('owner');
    const smtpUrl = `smtp://mailer:${marker('smtp')}@127.0.0.1:2525`;
    const r = await init(
      ['--owner-password-file', '-', '--smtp-url-file', secretFile(`${smtpUrl}\n`)],
      `${password}\n`,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).not.toContain(password);
    expect(JSON.parse(readFileSync(join(r.dataDir, 'herald.json'), 'utf8')).smtpUrl).toBe(smtpUrl);
    expect(await verifyPassword(await passwordHashOf(r.database.url, 'owner@acme.test'), password)).toBe(true);
  });

  it('reads the owner password from a file', async () => {
    const password = marker('owner');
    const r = await init(['--owner-password-file', secretFile(password)]);
    expect(r.code, r.stderr).toBe(0);
    expect(await verifyPassword(await passwordHashOf(r.database.url, 'owner@acme.test'), password)).toBe(true);
  });

  it('still takes --owner-password and --smtp-url with a password, warning without echoing them', async () => {
    const password = marker('owner');
    const smtpSecret = marker('smtp');
    const smtpUrl = `smtp://mailer:${smtpSecret}@127.0.0.1:2525`;
    const r = await init(['--owner-password', password, '--smtp-url', smtpUrl]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/--owner-password is deprecated.*use --owner-password-file/);
    expect(r.stderr).toMatch(/--smtp-url with a password is deprecated.*use --smtp-url-file/);
    expect(r.stderr + r.stdout).not.toContain(password);
    expect(r.stderr + r.stdout).not.toContain(smtpSecret);
    expect(JSON.parse(readFileSync(join(r.dataDir, 'herald.json'), 'utf8')).smtpUrl).toBe(smtpUrl);
    expect(await verifyPassword(await passwordHashOf(r.database.url, 'owner@acme.test'), password)).toBe(true);
  });

  it('takes --smtp-url without a password with no warning', async () => {
    const r = await init(['--smtp-url', 'smtp://127.0.0.1:2525']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
  });

  it('refuses an empty secret file, stdin, or a flag and its file together (exit 2)', async () => {
    const dataDir = join(testTempDir('herald-init-empty-'), 'data');
    const base = ['init', '--yes', '--data-dir', dataDir, '--tenant', 'Acme', '--owner-email', 'owner@acme.test'];
    const cases: Array<{ extra: string[]; input?: string; message: RegExp }> = [
      { extra: ['--owner-password-file', secretFile('')], message: /--owner-password-file is empty/ },
      { extra: ['--owner-password-file', '-'], input: '\n', message: /--owner-password-file is empty/ },
      { extra: ['--smtp-url-file', secretFile(' \n')], message: /--smtp-url-file is empty/ },
      {
        extra: ['--owner-password-file', secretFile('long enough password'), '--owner-password', 'another password'],
        message: /--owner-password-file or --owner-password, not both/,
      },
      {
        extra: ['--owner-password-file', '-', '--smtp-url-file', '-'],
        input: 'long enough password\n',
        message: /cannot both read standard input/,
      },
    ];
    for (const { extra, input, message } of cases) {
      const r = await runCli([...base, ...extra], { env: ENV, input });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });
});

describe('herald users secrets', { timeout: 180_000 }, () => {
  let database: TestDatabase;
  let dataDir: string;
  let env: Record<string, string | undefined>;
  beforeAll(async () => {
    database = await createTestDatabase();
    dataDir = runTempDir('herald-users-secrets-');
    env = { ...ENV, DATABASE_URL: database.url, HERALD_ENCRYPTION_KEYS: `k1:${generateKey()}`, HERALD_MODE: 'multi' };
  });
  afterAll(() => database?.drop());
  const herald = (args: string[], input?: string) => runCli([...args, '--data-dir', dataDir], { env, input });

  it('users create reads --password-file from a file and reset-password from stdin', async () => {
    const first = marker('first');
    const created = await herald(['users', 'create', 'file@acme.test', '--password-file', secretFile(first), '--json']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toBe('');
    expect(JSON.parse(created.stdout)).not.toHaveProperty('generated_password');
    expect(await verifyPassword(await passwordHashOf(database.url, 'file@acme.test'), first)).toBe(true);

    const second = marker('second');
    const reset = await herald(['users', 'reset-password', 'file@acme.test', '--password-file', '-'], `${second}\n`);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stderr).toBe('');
    expect(reset.stdout).not.toContain(second);
    expect(await verifyPassword(await passwordHashOf(database.url, 'file@acme.test'), second)).toBe(true);
  });

  it('users create and reset-password still take --password, warning without echoing it', async () => {
    const first = marker('first');
    const created = await herald(['users', 'create', 'flag@acme.test', '--password', first]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toMatch(/--password is deprecated.*use --password-file/);
    expect(created.stderr + created.stdout).not.toContain(first);
    expect(await verifyPassword(await passwordHashOf(database.url, 'flag@acme.test'), first)).toBe(true);

    const second = marker('second');
    const reset = await herald(['users', 'reset-password', 'flag@acme.test', '--password', second]);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stderr).toMatch(/--password is deprecated.*use --password-file/);
    expect(reset.stderr + reset.stdout).not.toContain(second);
    expect(await verifyPassword(await passwordHashOf(database.url, 'flag@acme.test'), second)).toBe(true);
  });

  it('refuses an empty password file or stdin (exit 2) and creates no user', async () => {
    for (const [args, input] of [
      [['users', 'create', 'empty@acme.test', '--password-file', secretFile('')], undefined],
      [['users', 'create', 'empty@acme.test', '--password-file', '-'], ''],
      [['users', 'reset-password', 'flag@acme.test', '--password-file', secretFile('\n')], undefined],
    ] as const) {
      const r = await herald([...args], input);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(/--password-file is empty/);
    }
    const list = JSON.parse((await herald(['users', 'list', '--json'])).stdout) as Array<{ email: string }>;
    expect(list.map((u) => u.email)).not.toContain('empty@acme.test');
  });
});

// A backup carries no secret in clear: the install SMTP's password (smtpUrl in herald.json) is left out
// of it, with or without --include-keys, and the backup and the restore say so.
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { inject } from 'vitest';
import { runCli } from '../support/cli.ts';
import { createTestDatabase } from '../support/database.ts';
import { admin, withDatabase } from '../support/global-setup.ts';
import { runTempDir } from '../support/tmp.ts';
import { OPERATOR_ENV } from '../support/operator-shell.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const ENV = OPERATOR_ENV;
const MARKER = `smtp-secret-${Math.random().toString(36).slice(2, 10)}`;

function tempDataDir(): string {
  const root = runTempDir('herald-backup-secrets-');
  chmodSync(root, 0o711);
  return join(root, 'data');
}

describe('herald backup', { timeout: 180_000 }, () => {
  it("leaves the install SMTP's password out, with and without the keys, and the restore says to set it", async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const dataDir = tempDataDir();
    const smtpUrl = `smtp://mailer:${MARKER}@127.0.0.1:2525`;
    const init = await runCli(
      ['init', '--yes', '--data-dir', dataDir, '--database-url', database.url, '--tenant', 'Backed'].concat([
        '--owner-email',
        'owner@backed.test',
        '--smtp-url',
        smtpUrl,
      ]),
      { env: ENV },
    );
    expect(init.code, init.stderr).toBe(0);
    expect(readFileSync(join(dataDir, 'herald.json'), 'utf8')).toContain(MARKER);

    for (const extra of [[], ['--include-keys']]) {
      const file = join(runTempDir('herald-backup-file-'), 'herald.gz');
      const backup = await runCli(['backup', '--data-dir', dataDir, '--out', file, ...extra], { env: ENV });
      expect(backup.code, backup.stderr).toBe(0);
      expect(backup.stdout).toContain("The install SMTP's password (smtpUrl) is not in it");
      const content = gunzipSync(readFileSync(file)).toString('utf8');
      expect(content).not.toContain(MARKER);
      expect(content).toContain('smtp://mailer@127.0.0.1:2525');
    }

    const file = join(runTempDir('herald-backup-file-'), 'herald.gz');
    expect((await runCli(['backup', '--data-dir', dataDir, '--out', file, '--include-keys'], { env: ENV })).code).toBe(
      0,
    );
    const name = `herald_backup_secrets_${Math.random().toString(36).slice(2, 10)}`;
    const adminUrl = inject('adminUrl');
    await admin(adminUrl, `CREATE DATABASE "${name}"`);
    cleanups.push(() => admin(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    const restored = tempDataDir();
    const restore = await runCli(
      ['restore', file, '--data-dir', restored, '--database-url', withDatabase(adminUrl, name)],
      { env: ENV },
    );
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout).toContain('has its user but no password');
    const config = JSON.parse(readFileSync(join(restored, 'herald.json'), 'utf8'));
    expect(config.smtpUrl).toBe('smtp://mailer@127.0.0.1:2525');
  });
});

// The quick set (npm run test:quick) must leave out every file that needs PostgreSQL: run without the
// global setup, such a file would fail for want of a database, not for a bug.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { DATABASE_HELPERS, needsDatabase, quickTestFiles } from './quick-files.ts';

const root = resolve(import.meta.dirname, '../..');

describe('the quick test files', () => {
  it('are told apart by helpers that still exist (a renamed one would let every file in)', () => {
    for (const helper of DATABASE_HELPERS) expect(existsSync(resolve(root, helper)), helper).toBe(true);
  });

  it('leave out files that open a database directly, through a helper, or by the global setup', () => {
    expect(needsDatabase(resolve(root, 'test/base/queue.test.ts'))).toBe(true); // test/support/database.ts
    expect(needsDatabase(resolve(root, 'test/delivery/workflow-crash.test.ts'))).toBe(true); // test/support/app.ts
    expect(needsDatabase(resolve(root, 'test/base/db/backup.test.ts'))).toBe(true); // herald-process.ts
    const quick = quickTestFiles();
    expect(quick).toContain('test/support/eventually.test.ts');
    expect(quick).toContain('test/base/ids.test.ts');
    expect(quick).not.toContain('test/base/queue.test.ts');
  });
});

// Temporary directories for tests, all under the run's temp root (global-setup.ts), which is removed
// when the run ends: a run leaves nothing behind in the system's temp directory.
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { inject, onTestFinished } from 'vitest';

/** A new directory that lives until the run ends (for files a whole test file shares). */
export function runTempDir(prefix: string): string {
  return mkdtempSync(join(inject('tempRoot'), prefix));
}

/** A new directory, removed as soon as the current test finishes. Call it inside a test. */
export function testTempDir(prefix: string): string {
  const dir = runTempDir(prefix);
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

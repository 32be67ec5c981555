// Once per quick run (vitest.quick.config.ts): only the run's temporary directory (test/support/tmp.ts)
// that global-setup.ts also provides, and no PostgreSQL, which the quick files do not need.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

let tempRoot: string | null = null;

export function setup(project: TestProject): void {
  tempRoot = mkdtempSync(join(tmpdir(), 'herald-test-run-'));
  project.provide('tempRoot', tempRoot);
}

export function teardown(): void {
  if (tempRoot) rmSync(tempRoot, { recursive: true, force: true });
}

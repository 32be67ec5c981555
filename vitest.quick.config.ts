// `npm run test:quick`: the test files that need no PostgreSQL (test/support/quick-files.ts finds
// them), with a global setup that starts none, so they run in seconds on any checkout.
import { defineConfig } from 'vitest/config';
import { quickTestFiles } from './test/support/quick-files.ts';

export default defineConfig({
  test: {
    include: quickTestFiles(),
    globalSetup: ['test/support/quick-global-setup.ts'],
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 3,
    testTimeout: 60_000,
    reporters: ['default'],
  },
});

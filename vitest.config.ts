import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Each file gets its own database (see test/support/database.ts), so files run in parallel safely.
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 3,
    // Many tests start the CLI or a whole Herald as processes: on a loaded 2-core machine one such start
    // can take several seconds, and a test makes several.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
  },
});

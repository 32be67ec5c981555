// A private database for one test file, cloned from the run's migrated template.
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { admin, withDatabase } from './global-setup.ts';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject('adminUrl');
  const template = inject('templateDatabase');
  const name = `herald_t_${randomBytes(6).toString('hex')}`;
  // CREATE DATABASE ... TEMPLATE needs the template to have no other connections; retry briefly if a
  // parallel clone is in progress.
  for (let attempt = 0; ; attempt++) {
    try {
      await admin(adminUrl, `CREATE DATABASE "${name}" TEMPLATE "${template}"`);
      break;
    } catch (error) {
      if (attempt >= 20 || !/being accessed by other users/.test((error as Error).message)) throw error;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
  return {
    url: withDatabase(adminUrl, name),
    name,
    drop: () => admin(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}

// The schema the migrations produce is the one migrations/schema.sql holds: a migration that changes
// it changes the file too (regenerated, and reviewed as part of the change), and nothing changes it
// by accident.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { describeSchema, REGENERATE_COMMAND, SCHEMA_FILE } from '../../migrations/schema.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase(); // a clone of the run's freshly migrated template
});
afterAll(async () => {
  await db?.drop();
});

test('a freshly migrated database has the schema of migrations/schema.sql', async () => {
  const actual = await describeSchema(db.url);
  const expected = readFileSync(SCHEMA_FILE, 'utf8');
  expect(
    actual,
    `the migrated schema differs from migrations/schema.sql; if the change is meant, regenerate it: ${REGENERATE_COMMAND}`,
  ).toBe(expected);
});

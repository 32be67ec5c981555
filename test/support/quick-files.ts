// Which test files need no PostgreSQL (`npm run test:quick` runs those alone, with no global setup):
// a file needs it when it, or a test helper it imports however indirectly, starts a test database, a
// Herald, or reads what the global setup provides. Worked out from the import graph of test/, so a
// file that starts needing the database leaves the quick set by itself// the list in vitest.quick.config.ts honest).
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Helpers that open PostgreSQL: a test database, a whole Herald, or the global setup's server. */
export const DATABASE_HELPERS = [
  'test/support/database.ts',
  'test/support/app.ts',
  'test/support/herald-process.ts',
  'test/support/global-setup.ts',
];
/** Text in a test file that reaches PostgreSQL without those helpers. */
const DATABASE_USES = [/\binject\(\s*'(adminUrl|templateDatabase)'/, /\bstartEmbeddedPostgres\(/, /\bDATABASE_URL\b/];

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The test/ modules a file loads when it runs (type-only imports load nothing). */
function runtimeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [
    ...text.matchAll(/^\s*import\s+(?!type\s)(?:[^'";]*?\s+from\s+)?'(\.[^']+)'|\bimport\(\s*'(\.[^']+)'\s*\)/gm),
  ].map((m) => m[1] ?? m[2]!);
  return specifiers
    .map((s) => resolve(dirname(file), s))
    .filter((path) => path.startsWith(join(ROOT, 'test')) && existsSync(path));
}

/** Whether the test file at this absolute path needs PostgreSQL. */
export function needsDatabase(file: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false;
  seen.add(file);
  if (DATABASE_HELPERS.includes(relative(ROOT, file))) return true;
  const text = readFileSync(file, 'utf8');
  if (DATABASE_USES.some((use) => use.test(text))) return true;
  return runtimeImports(file).some((imported) => needsDatabase(imported, seen));
}

/** The test files (paths from the repository root, sorted) that run without PostgreSQL. */
export function quickTestFiles(): string[] {
  return testFiles(join(ROOT, 'test'))
    .filter((file) => !needsDatabase(file))
    .map((file) => relative(ROOT, file))
    .sort();
}

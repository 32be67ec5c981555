// Each table has one owning folder (docs/architecture.md, "Tables and their owners"): every statement
// that writes a table lives under its owner. This reads the owners from the document, so they are
// declared once, scans every .ts file of server/ and cli/ for SQL that writes a table, and fails on a
// write outside the owner's folder, on a written table the document does not list, and on a listed
// table the migrations no longer create.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sourceFiles } from './support/source-files.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Writes a scanner finds: INSERT INTO t, UPDATE t, DELETE FROM t, COPY t FROM, TRUNCATE [TABLE] t (a CTE's write is one of these). */
const WRITE =
  /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?|COPY)\s+(?:ONLY\s+)?(?:public\.)?"?([a-z_][a-z0-9_]*)"?/g;

/** Words that follow UPDATE in a lock clause (FOR UPDATE SKIP LOCKED, FOR UPDATE OF t), not a table. */
const NOT_A_TABLE = new Set(['set', 'of', 'skip', 'nowait']);

export function writtenTables(text: string): string[] {
  const tables = new Set<string>();
  for (const m of text.matchAll(WRITE)) {
    const keyword = m[1]!;
    if (keyword === 'COPY' && !/^\s*(\([^)]*\))?\s*FROM\b/i.test(text.slice(m.index! + m[0].length))) continue;
    if (keyword === 'UPDATE' && /FOR\s+$/i.test(text.slice(Math.max(0, m.index! - 8), m.index))) continue;
    if (NOT_A_TABLE.has(m[2]!)) continue;
    tables.add(m[2]!);
  }
  return [...tables];
}

/** Owner folder per table, from the document's table. */
export function ownersFrom(markdown: string): Map<string, string> {
  const section = markdown.split(/^## Tables and their owners$/m)[1]?.split(/^## /m)[0] ?? '';
  const owners = new Map<string, string>();
  for (const line of section.split('\n')) {
    const m = /^\| `([a-z_0-9]+)` \| `([^`]+)` \|/.exec(line);
    if (m) owners.set(m[1]!, m[2]!);
  }
  return owners;
}

const owners = ownersFrom(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));
const created = new Set(
  [
    ...readFileSync(join(ROOT, 'migrations/schema.sql'), 'utf8').matchAll(
      /CREATE (?:UNLOGGED )?TABLE (?:public\.)?"?([a-z_0-9]+)/g,
    ),
  ].map((m) => m[1]!),
);
const writes = ['server', 'cli']
  .flatMap((dir) => sourceFiles(dir))
  .flatMap((file) => writtenTables(readFileSync(join(ROOT, file), 'utf8')).map((table) => ({ file, table })));

describe('the scanner', () => {
  it('catches each form of write', () => {
    expect(writtenTables('INSERT INTO contacts (id) VALUES ($1)')).toEqual(['contacts']);
    expect(writtenTables('INSERT INTO topics (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET key = $2')).toEqual([
      'topics',
    ]);
    expect(writtenTables('UPDATE events e SET status = $1')).toEqual(['events']);
    expect(writtenTables('DELETE FROM public.users WHERE id = $1')).toEqual(['users']);
    expect(writtenTables('COPY contacts (id) FROM STDIN')).toEqual(['contacts']);
    expect(writtenTables('TRUNCATE TABLE sso_states')).toEqual(['sso_states']);
    expect(
      writtenTables('WITH d AS (UPDATE deliveries SET status = $1 RETURNING event_id) UPDATE events SET n = 1'),
    ).toEqual(['deliveries', 'events']);
    expect(writtenTables('`INSERT INTO deliveries (${deliveryColumns}) SELECT 1`')).toEqual(['deliveries']);
  });

  it('ignores reads and lock clauses', () => {
    expect(writtenTables('SELECT id FROM events WHERE id = $1 FOR UPDATE SKIP LOCKED')).toEqual([]);
    expect(writtenTables('SELECT id FROM events FOR UPDATE OF e')).toEqual([]);
    expect(writtenTables('COPY (SELECT 1) TO STDOUT')).toEqual([]);
  });
});

describe('tables and their owners', () => {
  it('lists tables', () => {
    expect(owners.size).toBeGreaterThan(30);
  });

  it('lists only tables the migrations create', () => {
    expect([...owners.keys()].filter((table) => !created.has(table))).toEqual([]);
  });

  it('lists every table written', () => {
    expect(
      [...new Set(writes.map((w) => w.table))].filter((table) => !owners.has(table) && created.has(table)),
    ).toEqual([]);
  });

  const strays = writes
    .filter(({ table, file }) => owners.has(table) && !file.startsWith(owners.get(table)!))
    .map(({ file, table }) => `${file}: writes ${table} (owner: ${owners.get(table)})`);

  it('has every write in its owner folder', () => {
    expect(strays).toEqual([]);
  });
});

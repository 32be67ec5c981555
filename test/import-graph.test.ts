// Imports point one way (docs/architecture.md): each top folder of server/ is a layer, highest first,
// and a file imports only its own layer and those below it. This reads every import of server/ and
// cli/ with a regular expression, resolves the relative ones, gives each file its folder's layer, and
// fails on an import that points up, on SQL in the CLI, and on an import circle of more than
// CIRCLE_LIMIT files, type-only imports included.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sourceFiles } from './support/source-files.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Layers, highest first: one per top folder; a file may import its own layer and those below it. */
export const LAYERS = [
  'cli/',
  'server/app/',
  'server/api/',
  'server/jobs/',
  'server/delivery/',
  'server/resources/',
  'server/channels/',
  'server/webhooks/',
  'server/schemas/',
  'server/base/',
];

/** Files the CLI must not import: it calls services or the HTTP API, never SQL. */
const SQL_MODULES = ['server/base/db/sql.ts', 'server/base/db/prepared.ts'];

/** A few files that need each other (a type one way, a function the other) are one thought; more are a tangle. */
const CIRCLE_LIMIT = 3;

export interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

const STATIC_IMPORT = /^\s*(import|export)\s+(type\s+)?(?:[\w*{}\s,$]*?\s+from\s+)?['"]([^'"]+)['"]/gm;
const DYNAMIC_IMPORT = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The relative imports of a source text, resolved against its file (static, re-exports, dynamic). */
export function importsOf(file: string, text: string): Edge[] {
  const edges: Edge[] = [];
  const add = (specifier: string, typeOnly: boolean) => {
    if (!specifier.startsWith('.')) return;
    edges.push({ from: file, to: relative(ROOT, resolve(ROOT, dirname(file), specifier)), typeOnly });
  };
  for (const m of text.matchAll(STATIC_IMPORT)) add(m[3]!, Boolean(m[2]));
  for (const m of text.matchAll(DYNAMIC_IMPORT)) add(m[1]!, false);
  return edges;
}

/** A file's layer: the index of its top folder in LAYERS (0 is the highest), or -1. */
function layerOf(path: string): number {
  return LAYERS.findIndex((folder) => path.startsWith(folder));
}

/** Strongly connected components of more than one file (Tarjan), each sorted. */
export function circles(edges: Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** Every broken rule of a set of edges, as readable lines. */
export function violations(edges: Edge[]): {
  upward: string[];
  sql: string[];
  unplaced: string[];
  circles: string[][];
} {
  const upward: string[] = [];
  const sql: string[] = [];
  const unplaced = new Set<string>();
  for (const { from, to } of edges) {
    if (!to.startsWith('server/') && !to.startsWith('cli/')) continue;
    if (to.startsWith('server/static/')) continue;
    const source = layerOf(from);
    const target = layerOf(to);
    if (source < 0) unplaced.add(from);
    if (target < 0) unplaced.add(to);
    if (source < 0 || target < 0) continue;
    if (from.startsWith('cli/') && SQL_MODULES.includes(to)) sql.push(`${from} -> ${to}`);
    if (target < source) upward.push(`${from} -> ${to} (${LAYERS[source]} imports ${LAYERS[target]})`);
  }
  return {
    upward,
    sql,
    unplaced: [...unplaced].sort(),
    circles: circles(edges).filter((c) => c.length > CIRCLE_LIMIT),
  };
}

export function projectEdges(): Edge[] {
  return [...sourceFiles('server'), ...sourceFiles('cli')].flatMap((file) =>
    importsOf(file, readFileSync(join(ROOT, file), 'utf8')),
  );
}

describe('the import graph of server/ and cli/', () => {
  const edges = projectEdges();
  const found = violations(edges);

  it('reads the imports', () => {
    expect(edges.length).toBeGreaterThan(400);
    expect(edges).toContainEqual({
      from: 'server/app/http-server.ts',
      to: 'server/api/routes/index.ts',
      typeOnly: false,
    });
    expect(edges).toContainEqual({ from: 'server/api/route.ts', to: 'server/channels/types.ts', typeOnly: true });
  });

  it('has one layer per top folder of server/', () => {
    const folders = readdirSync(join(ROOT, 'server')).filter(
      (name) => name !== 'static' && statSync(join(ROOT, 'server', name)).isDirectory(),
    );
    expect(folders.map((name) => `server/${name}/`).sort()).toEqual(
      LAYERS.filter((l) => l.startsWith('server/')).sort(),
    );
    expect(
      readdirSync(join(ROOT, 'server')).filter((name) => name.endsWith('.ts')),
      'server/ holds folders only',
    ).toEqual([]);
  });

  it('gives every file a layer', () => {
    expect(found.unplaced, 'put these files under a folder listed in LAYERS in test/import-graph.test.ts').toEqual([]);
  });

  it('has no import that points up', () => {
    expect(found.upward).toEqual([]);
  });

  it('keeps SQL out of the CLI', () => {
    expect(found.sql).toEqual([]);
  });

  it(`has no import circle of more than ${CIRCLE_LIMIT} files, type-only imports included`, () => {
    expect(found.circles).toEqual([]);
  });
});

describe('the import-graph check itself', () => {
  it('catches an upward import, SQL in the CLI, an unplaced file and a circle of more than three files', () => {
    const text = (specifiers: string[]) => specifiers.map((s) => `import { x } from '${s}';`).join('\n');
    const edges = [
      ...importsOf('server/resources/a.ts', text(['../api/route.ts', './b.ts'])),
      ...importsOf('server/resources/b.ts', `import type { Y } from './c.ts';`),
      ...importsOf('server/resources/c.ts', text(['./d.ts'])),
      ...importsOf('server/resources/d.ts', `const m = await import('./a.ts');`),
      ...importsOf('server/base/e.ts', `import type { F } from './f.ts';`),
      ...importsOf('server/base/f.ts', text(['./e.ts'])),
      ...importsOf('cli/thing.ts', text(['../server/base/db/sql.ts'])),
      ...importsOf('server/nowhere.ts', text(['./base/errors.ts'])),
    ];
    const found = violations(edges);
    expect(found.upward).toEqual([
      'server/resources/a.ts -> server/api/route.ts (server/resources/ imports server/api/)',
    ]);
    expect(found.sql).toEqual(['cli/thing.ts -> server/base/db/sql.ts']);
    expect(found.unplaced).toEqual(['server/nowhere.ts']);
    expect(found.circles).toEqual([
      ['server/resources/a.ts', 'server/resources/b.ts', 'server/resources/c.ts', 'server/resources/d.ts'],
    ]);
  });
});

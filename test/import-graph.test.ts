// Imports point one way (docs/architecture.md): cli -> http, routes and jobs -> services -> delivery,
// stream, transports -> db, crypto, auth and the leaves. This reads every import of server/ and cli/
// with a regular expression, resolves the relative ones, gives each file its layer, and fails on an
// import that points up, on SQL in the CLI, and on a cycle of (value) imports between modules.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Layers, highest first: a file may import its own layer and those below it. A file named here wins over its directory. */
const LAYERS: Array<{ layer: number; name: string; paths: string[] }> = [
  { layer: 7, name: 'cli', paths: ['cli/'] },
  { layer: 6, name: 'composition root', paths: ['server/app/runtime.ts'] },
  { layer: 5, name: 'http, routes, jobs', paths: ['server/http/', 'server/api/routes/', 'server/jobs/', 'server/inbound/'] },
  { layer: 4, name: 'services', paths: ['server/resources/', 'server/app/status-checks.ts'] },
  { layer: 3, name: 'delivery, stream, transports', paths: ['server/delivery/', 'server/channels/inbox/', 'server/transports/', 'server/templates/', 'server/channels/email/', 'server/webhooks/'] },
  {
    layer: 2,
    name: 'db, crypto, auth, schemas',
    // The template engine wraps Liquid and nothing else: schemas check template syntax with it.
    paths: ['server/base/db/', 'server/base/crypto/', 'server/base/auth/', 'server/base/net/', 'server/schemas/', 'server/base/queue.ts', 'server/base/queue-statistics.ts', 'server/base/rate-limit.ts', 'server/base/metrics/', 'server/base/template-engine.ts'],
  },
  {
    layer: 1,
    name: 'leaves',
    paths: ['server/base/config.ts', 'server/base/errors.ts', 'server/base/ids.ts', 'server/base/random-pool.ts', 'server/base/clock.ts', 'server/base/logger.ts', 'server/base/validation.ts', 'server/base/timestamps.ts'],
  },
];

/** Files the CLI must not import: it calls services or the HTTP API, never SQL. */
const SQL_MODULES = ['server/base/db/sql.ts', 'server/base/db/prepared.ts'];

/**
 * Upward imports that exist today inside server/delivery/ (being rewritten): they are to be removed,
 * never added to. An entry that no longer occurs fails too, so the list only shrinks.
 */
const KNOWN_UPWARD = [
  'server/channels/email/channel.ts -> server/channels/email/sender-domains.ts',
];

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = `${dir}/${name}`;
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
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

function layerOf(path: string): { layer: number; name: string } | null {
  return LAYERS.find((entry) => entry.paths.includes(path)) ?? LAYERS.find((entry) => entry.paths.some((p) => p.endsWith('/') && path.startsWith(p))) ?? null;
}

/** Strongly connected components of more than one file (Tarjan), each sorted. */
function cycles(edges: Edge[]): string[][] {
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

/**
 * Every broken rule of a set of edges, as readable lines. Cycles are looked for among value imports
 * other than the known upward ones (a cycle across layers always has an upward edge: those are
 * reported, and tolerated, as such).
 */
export function violations(edges: Edge[], knownUpward: string[] = []): { upward: string[]; sql: string[]; unplaced: string[]; cycles: string[][] } {
  const upward: string[] = [];
  const sql: string[] = [];
  const unplaced = new Set<string>();
  for (const { from, to, typeOnly } of edges) {
    if (!to.startsWith('server/') && !to.startsWith('cli/')) continue;
    const source = layerOf(from);
    const target = layerOf(to);
    if (!source) unplaced.add(from);
    if (!target) unplaced.add(to);
    if (!source || !target) continue;
    if (from.startsWith('cli/') && SQL_MODULES.includes(to)) sql.push(`${from} -> ${to}`);
    // Everyone may name the Runtime type; only the composition root's callers may run it.
    if (typeOnly && to === 'server/app/runtime.ts') continue;
    if (target.layer > source.layer) upward.push(`${from} -> ${to} (${source.name} imports ${target.name})`);
  }
  const cyclic = edges.filter((e) => !e.typeOnly && !knownUpward.includes(`${e.from} -> ${e.to}`));
  return { upward, sql, unplaced: [...unplaced].sort(), cycles: cycles(cyclic) };
}

function projectEdges(): Edge[] {
  return [...sourceFiles('server'), ...sourceFiles('cli')].flatMap((file) => importsOf(file, readFileSync(join(ROOT, file), 'utf8')));
}

describe('the import graph of server/ and cli/', () => {
  const edges = projectEdges();
  const found = violations(edges, KNOWN_UPWARD);
  const known = (line: string) => KNOWN_UPWARD.some((k) => line.startsWith(`${k} (`));

  it('reads the imports', () => {
    expect(edges.length).toBeGreaterThan(400);
    expect(edges).toContainEqual({ from: 'server/app/http-server.ts', to: 'server/api/routes/index.ts', typeOnly: false });
    expect(edges).toContainEqual({ from: 'server/api/route.ts', to: 'server/app/runtime.ts', typeOnly: true });
  });

  it('gives every file a layer', () => {
    expect(found.unplaced, 'add these files (or their directory) to LAYERS in test/import-graph.test.ts').toEqual([]);
  });

  it('has no import that points up', () => {
    expect(found.upward.filter((line) => !known(line))).toEqual([]);
  });

  it('still has every known upward import of server/delivery/ (remove the ones that are gone)', () => {
    expect(KNOWN_UPWARD.filter((k) => !found.upward.some((line) => line.startsWith(`${k} (`)))).toEqual([]);
  });

  it('keeps SQL out of the CLI', () => {
    expect(found.sql).toEqual([]);
  });

  it('has no cycle between modules', () => {
    expect(found.cycles).toEqual([]);
  });
});

describe('the import-graph check itself', () => {
  it('catches an upward import, SQL in the CLI, an unplaced file and a cycle', () => {
    const text = (specifiers: string[]) => specifiers.map((s) => `import { x } from '${s}';`).join('\n');
    const edges = [
      ...importsOf('server/services/a.ts', text(['../http/auth.ts', './b.ts'])),
      ...importsOf('server/services/b.ts', `import type { Runtime } from '../runtime.ts';\nconst m = await import('./a.ts');`),
      ...importsOf('cli/thing.ts', text(['../server/base/db/sql.ts'])),
      ...importsOf('server/nowhere.ts', text(['./errors.ts'])),
    ];
    const found = violations(edges);
    expect(found.upward).toEqual(['server/services/a.ts -> server/api/auth-rules.ts (services imports http, routes, jobs)']);
    expect(found.sql).toEqual(['cli/thing.ts -> server/base/db/sql.ts']);
    expect(found.unplaced).toEqual(['server/nowhere.ts']);
    expect(found.cycles).toEqual([['server/services/a.ts', 'server/services/b.ts']]);
  });
});

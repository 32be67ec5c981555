// Bad input never gets a 500: every route, called with a credential it accepts, gets bodies, queries and
// path parameters built to pass most of its validation with one value out of the ordinary (too long
// for an index, huge or negative numbers, wrong types, empty containers, lone surrogates ...), and
// must answer something other than a 5xx. The request bodies start from an example derived from the
// route's own schema, so the odd value reaches the handler and the database whenever the schema lets
// it through.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTenantFixture, insertNotificationType, requestAs, type TenantFixture } from '../support/fixtures.ts';
import { routes } from '../../server/api/routes/index.ts';
import type { AuthRule, RouteDefinition } from '../../server/api/route.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: Json[];
  const?: Json;
  format?: string;
  pattern?: string;
  minLength?: number;
  minimum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  $defs?: Record<string, JsonSchema>;
}

/** A value the schema accepts, as far as a simple reading of it can tell (the fuzzing only needs most of a body to be valid). */
function example(schema: JsonSchema, defs: Record<string, JsonSchema>, depth = 0, name = ''): Json {
  if (depth > 8) return null;
  if (schema.$ref) return example(defs[schema.$ref.split('/').pop()!]!, defs, depth + 1, name);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0]!;
  const choices = schema.anyOf ?? schema.oneOf;
  if (choices) return example(choices.find((c) => c.type !== 'null') ?? choices[0]!, defs, depth + 1, name);
  if (schema.allOf) return example(schema.allOf[0]!, defs, depth + 1, name);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'string':
      return exampleString(schema, name);
    case 'integer':
    case 'number':
      return Math.max(1, schema.minimum ?? 1, (schema.exclusiveMinimum ?? 0) + 1);
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => example(schema.items ?? {}, defs, depth + 1));
    case 'object': {
      const out: Record<string, Json> = {};
      for (const key of schema.required ?? []) out[key] = example(schema.properties?.[key] ?? {}, defs, depth + 1, key);
      return out;
    }
    default:
      return 'x';
  }
}

/** A string for the schema; `name` (the property's) hints at what a plain string stands for. */
function exampleString(schema: JsonSchema, name: string): string {
  if (/email|^to$/.test(name)) return 'robust@example.org';
  if (name === 'domain') return 'mail.example.org';
  const byFormat: Record<string, string> = {
    email: 'robust@example.org',
    uri: 'https://example.org/robust',
    url: 'https://example.org/robust',
    uuid: randomUUID(),
    'date-time': '2026-01-01T00:00:00Z',
    hostname: 'example.org',
  };
  if (schema.format && byFormat[schema.format]) return byFormat[schema.format]!;
  const pattern = schema.pattern ? new RegExp(schema.pattern) : null;
  for (const candidate of ['robust', 'en', 'x', 'robust@example.org', 'https://example.org', '#336699', 'a1', 'sk_x']) {
    if ((!pattern || pattern.test(candidate)) && candidate.length >= (schema.minLength ?? 0)) return candidate;
  }
  return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
}

/** Values out of the ordinary, each put in place of one field of an otherwise plausible body. */
const ODD_VALUES: Json[] = [
  '',
  ' ',
  'x'.repeat(3000), // over the 2,704-byte limit of a btree index entry
  'é'.repeat(40_000),
  '\ud800', // half a surrogate pair
  'a\u0000b',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  "'; DROP TABLE contacts; --",
  -1,
  0,
  1.5,
  2 ** 31,
  2 ** 63,
  1e308,
  -1e308,
  true,
  null,
  [],
  {},
  ['x'.repeat(3000)],
  { ['k'.repeat(3000)]: 'v' },
  [[[[[[[[[[[]]]]]]]]]]],
];
const ODD_QUERY_VALUES = ['', 'x'.repeat(3000), '-1', '1e999', 'NaN', '9'.repeat(40), '%ZZ', '0x10', 'null'];
const ODD_PATH_VALUES = [
  'x'.repeat(3000),
  '%ZZ',
  '%00',
  'NaN',
  '-1',
  '00000000-0000-0000-0000-000000000000',
  '..',
  'é',
];

interface Fixture {
  tenant: TenantFixture;
  contactId: string;
  contactToken: string;
}

function credentialFor(rule: AuthRule, f: Fixture): string | undefined {
  switch (rule) {
    case 'public':
      return undefined;
    case 'contact':
      return f.contactToken;
    case 'user':
    case 'management':
      return f.tenant.ownerToken;
    default:
      return f.tenant.serviceKey;
  }
}

/** Plausible path parameters: the fixture's contact for contact ids (so contact tokens pass), else fresh values. */
function pathWith(route: RouteDefinition, f: Fixture, odd?: { name: string; value: string }): string {
  return route.path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => {
    if (odd?.name === name) return odd.value;
    if (name === 'id' && route.path.startsWith('/v1/contacts/')) return f.contactId;
    if (/(^|_)id$/.test(name)) return randomUUID();
    return 'robust';
  });
}

/** A plausible query for the route (its required parameters) and the names of all its parameters. */
function queryExample(route: RouteDefinition): { values: Record<string, string>; names: string[] } {
  if (!route.query) return { values: {}, names: [] };
  const schema = z.toJSONSchema(route.query, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const defs = schema.$defs ?? {};
  const root = schema.$ref ? defs[schema.$ref.split('/').pop()!]! : schema;
  const value = example(root, defs) as Record<string, Json>;
  return {
    values: Object.fromEntries(Object.entries(value ?? {}).map(([k, v]) => [k, String(v)])),
    names: Object.keys(root.properties ?? {}),
  };
}

function queryString(values: Record<string, string>, raw?: { name: string; value: string }): string {
  const parts = Object.entries(values).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
  if (raw) parts.push(`${encodeURIComponent(raw.name)}=${raw.value}`);
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}

/** HTTPValidationError (a list of located issues) or ErrorResponse (a message and a code). */
function wellFormedError(body: unknown): boolean {
  const b = body as { detail?: unknown; code?: unknown } | null;
  if (Array.isArray(b?.detail))
    return b.detail.every((d: { loc?: unknown; msg?: unknown }) => Array.isArray(d.loc) && typeof d.msg === 'string');
  return typeof b?.detail === 'string' && typeof b.code === 'string';
}

// The SSE stream answers a valid request with a response that never ends; its inputs are covered in stream.test.ts.
const fuzzed = routes.filter((r) => !r.produces);

describe('every route refuses bad input without a 5xx', () => {
  it.each(fuzzed.map((r) => [`${r.method} ${r.path}`, r] as const))('%s', async (_, route) => {
    // A tenant of its own per route: whatever a request manages to change stays with this route.
    const tenant = await createTenantFixture(app, `Robust ${route.method} ${route.path}`);
    const contactId = await tenant.contact(`robust_${randomUUID()}`);
    // The names the examples use ('robust') exist, so that plausible requests get past the lookups.
    await insertNotificationType(app, tenant.tenantId, { key: 'robust' });
    const f: Fixture = { tenant, contactId, contactToken: tenant.tokenFor(contactId) };
    const token = credentialFor(route.auth, f);
    const failures: string[] = [];
    const send = async (what: string, path: string, body?: unknown, rawBody?: string) => {
      const res = await requestAs(app, route.method, path, { token, body, rawBody });
      if (res.status >= 500) failures.push(`${what}: ${res.status} ${res.text.slice(0, 200)}`);
      else if (res.status >= 400 && !wellFormedError(res.body))
        failures.push(
          `${what}: ${res.status} with neither ErrorResponse nor HTTPValidationError: ${res.text.slice(0, 200)}`,
        );
    };
    const { values: query, names: queryNames } = queryExample(route);
    const path = pathWith(route, f);

    await send('plain', path + queryString(query), route.body ? {} : undefined);
    if (route.body) {
      const schema = z.toJSONSchema(route.body, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
      const defs = schema.$defs ?? {};
      const root = schema.$ref ? defs[schema.$ref.split('/').pop()!]! : schema;
      const base = example(root, defs) as Record<string, Json>;
      const url = path + queryString(query);
      for (const shape of [null, [], 'x', 1, {}, base]) await send(`body ${JSON.stringify(shape)}`, url, shape);
      await send('body nested 10,000 deep', url, undefined, `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`);
      for (const key of Object.keys(root.properties ?? {})) {
        for (const odd of ODD_VALUES)
          await send(`body.${key} = ${JSON.stringify(odd).slice(0, 40)}`, url, { ...base, [key]: odd });
      }
    }
    for (const name of queryNames) {
      for (const value of ODD_QUERY_VALUES)
        await send(`query ${name}=${value.slice(0, 40)}`, path + queryString(query, { name, value }));
    }
    for (const [, name] of route.path.matchAll(/:([A-Za-z0-9_]+)/g)) {
      for (const value of ODD_PATH_VALUES)
        await send(
          `path ${name}=${value.slice(0, 40)}`,
          pathWith(route, f, { name: name!, value }) + queryString(query),
        );
    }
    expect(failures).toEqual([]);
  });
});

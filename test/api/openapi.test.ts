// The OpenAPI document is generated from the route table: it must be valid OpenAPI 3.1 (checked by an
// independent validator), list every route the app serves, and every route must declare its schemas.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validate } from '@readme/openapi-parser';
import { startTestApp, type TestApp } from '../support/app.ts';
import { routes } from '../../server/api/routes/index.ts';
import { createApp } from '../../server/api/app.ts';
import { openApiPath } from '../../server/api/route.ts';

let app: TestApp;
let doc: any;
beforeAll(async () => {
  app = await startTestApp();
  doc = (await app.request('GET', '/v1/openapi.json')).body;
});
afterAll(async () => {
  await app?.close();
});

describe('GET /v1/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document with info.version 0.1.0', async () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('0.1.0');
    const result = await validate(structuredClone(doc));
    if (!result.valid) console.error(JSON.stringify(result.errors, null, 2));
    expect(result.valid).toBe(true);
  });

  it('documents every route registered in the app but the browser entry points, and nothing else', () => {
    const registered = createApp(app.runtime, routes)['~routes'];
    const entryPoints = routes.filter((r) => r.notAnOperation).map((r) => `${r.method} ${openApiPath(r.path)}`);
    expect(entryPoints).toEqual(['GET /']);
    const served = registered
      .filter((r) => r.method !== 'OPTIONS')
      .map((r) => `${r.method} ${openApiPath(r.route ?? '')}`)
      .filter((r) => !entryPoints.includes(r))
      .sort();
    expect(served.length).toBe(registered.filter((r) => r.method !== 'OPTIONS').length - 1);
    expect(doc.paths['/']).toBeUndefined();
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(documented).toEqual(served);
  });

  it('uses unique operation ids', () => {
    const ids = Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap((ops) =>
      Object.values(ops).map((o) => o.operationId),
    );
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('lists 422 only on operations that have input to validate', () => {
    for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        const hasInput =
          operation.requestBody !== undefined ||
          (operation.parameters ?? []).some((p: { in: string }) => p.in !== 'header');
        expect('422' in operation.responses, `${method} ${path}`).toBe(hasInput);
      }
    }
    expect(Object.keys(doc.paths['/healthz'].get.responses)).not.toContain('422');
    expect(doc.paths['/v1/notifications'].post.responses['422'].content['application/json'].schema.$ref).toBe(
      '#/components/schemas/HTTPValidationError',
    );
  });

  it('describes requests as clients send them: a field with a default is optional and has no default keyword', () => {
    const trigger = doc.components.schemas.TriggerRequest;
    expect(trigger.required).toEqual(['type', 'recipients']);
    expect(trigger.properties.variables.default).toBeUndefined();
    expect(trigger.properties.variables.description).toContain('Default: {}');
    const requestSchemas = Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((ops) =>
      Object.values(ops).flatMap((op) => Object.values(op.requestBody?.content ?? {}).map((c: any) => c.schema)),
    );
    const reachable = new Set<string>();
    const visit = (schema: unknown) => {
      for (const [, name] of JSON.stringify(schema).matchAll(/#\/components\/schemas\/(\w+)/g)) {
        if (reachable.has(name!)) continue;
        reachable.add(name!);
        visit(doc.components.schemas[name!]);
      }
    };
    requestSchemas.forEach(visit);
    for (const name of reachable) expect(JSON.stringify(doc.components.schemas[name]), name).not.toMatch(/"default":/);
    expect(JSON.stringify(requestSchemas)).not.toMatch(/"default":/);
  });

  it('names a request schema <Name>Input where the response schema of that name differs', () => {
    // Responses close their objects (additionalProperties: false); requests do not.
    expect(doc.components.schemas.QuietHours.additionalProperties).toBe(false);
    expect(doc.components.schemas.QuietHoursInput.additionalProperties).toBeUndefined();
    expect(JSON.stringify(doc.components.schemas.SetQuietHoursRequest)).toContain(
      '#/components/schemas/QuietHoursInput',
    );
    expect(JSON.stringify(doc.components.schemas.ContactResponse)).toContain('#/components/schemas/QuietHours"');
  });

  it('has no schema that refers to itself (generators make such a type refer to itself: TS2502)', () => {
    const schemas = doc.components.schemas as Record<string, unknown>;
    const refs = (schema: unknown) =>
      [...JSON.stringify(schema).matchAll(/#\/components\/schemas\/(\w+)/g)].map((m) => m[1]!);
    for (const name of Object.keys(schemas)) {
      const seen = new Set<string>();
      const pending = refs(schemas[name]);
      while (pending.length > 0) {
        const next = pending.pop()!;
        expect(next, `${name} refers to itself`).not.toBe(name);
        if (!seen.has(next)) {
          seen.add(next);
          pending.push(...refs(schemas[next]));
        }
      }
    }
    expect(doc.components.schemas.JsonValue).toEqual({ description: 'Any JSON value' });
  });

  it('pages every paged list the same way: limit defaults to 50, at most 200', () => {
    const paged: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(operations)) {
        const limit = (operation.parameters ?? []).find(
          (p: { in: string; name: string }) => p.in === 'query' && p.name === 'limit',
        );
        if (!limit) continue;
        paged.push(`${method.toUpperCase()} ${path}`);
        const { minimum, maximum, default: byDefault } = limit.schema;
        expect({ minimum, maximum, byDefault }, `${method} ${path}`).toEqual({
          minimum: 1,
          maximum: 200,
          byDefault: 50,
        });
      }
    }
    expect(paged).toEqual(
      expect.arrayContaining([
        'GET /v1/notifications',
        'GET /v1/broadcasts',
        'GET /v1/topics/{key}/subscribers',
        'GET /v1/contacts/{id}/notifications',
        'GET /v1/audit-log',
        'GET /v1/suppressions',
        'GET /v1/webhooks',
      ]),
    );
  });

  it('describes the error bodies', () => {
    expect(doc.components.schemas.ErrorResponse.required).toEqual(['detail', 'code']);
    expect(doc.components.schemas.HTTPValidationError.properties.detail.items.$ref).toBe(
      '#/components/schemas/ValidationError',
    );
  });
});

describe('route table', () => {
  it.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))('%s declares its schemas', (_name, route) => {
    // A success response with a schema (or null for 204, or a redirect such as SSO's 302), and a summary.
    const statuses = Object.keys(route.responses).map(Number);
    expect(statuses.some((s) => s >= 200 && s < 400)).toBe(true);
    expect(route.summary.length).toBeGreaterThan(0);
    // Path parameters are validated by a schema naming each of them.
    const pathParams = [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);
    if (pathParams.length > 0) {
      expect(route.params, `${route.path} needs a params schema`).toBeDefined();
      expect(Object.keys((route.params as any).shape).sort()).toEqual([...pathParams].sort());
    }
    // Writes with a body declare it; a route that reads a body without a schema cannot exist.
    if (route.body) expect(typeof route.body.safeParse).toBe('function');
    // Every non-public route documents 401.
    if (route.auth !== 'public')
      expect(doc.paths[openApiPath(route.path)][route.method.toLowerCase()].responses['401']).toBeDefined();
  });
});

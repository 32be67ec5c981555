// The OpenAPI document is generated from the route table: it must be valid OpenAPI 3.1 (checked by an
// independent validator), list every route the app serves, and every route must declare its schemas.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validate } from '@readme/openapi-parser';
import { startTestApp, type TestApp } from './support/app.ts';
import { routes } from '../server/routes/index.ts';
import { createApp } from '../server/http/app.ts';
import { openApiPath } from '../server/http/route.ts';

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

  it('documents every route registered in the app, and nothing else', () => {
    const served = createApp(app.runtime, routes)['~routes']
      .filter((r) => r.method !== 'OPTIONS')
      .map((r) => `${r.method} ${openApiPath(r.route ?? '')}`)
      .sort();
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(documented).toEqual(served);
  });

  it('uses unique operation ids', () => {
    const ids = Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('describes the error bodies', () => {
    expect(doc.components.schemas.ErrorResponse.required).toEqual(['detail', 'code']);
    expect(doc.components.schemas.HTTPValidationError.properties.detail.items.$ref).toBe('#/components/schemas/ValidationError');
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
    if (route.auth !== 'public') expect(doc.paths[openApiPath(route.path)][route.method.toLowerCase()].responses['401']).toBeDefined();
  });
});

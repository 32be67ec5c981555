// The OpenAPI 3.1 document, generated from the route table and the same zod schemas that validate
// requests and (in tests) responses. Named schemas (.meta({ id })) become components.
import { z } from 'zod';
import { ERROR_CODES } from '../errors.ts';
import { openApiPath, type RouteDefinition } from './route.ts';

export const API_VERSION = '0.1.0';

type JsonSchema = Record<string, unknown>;

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 400: 'Bad Request', 401: 'Unauthorized',
  402: 'Payment Required', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict',
  413: 'Payload Too Large', 415: 'Unsupported Media Type', 422: 'Validation Error', 429: 'Too Many Requests',
  500: 'Internal Server Error', 503: 'Service Unavailable',
};

export function buildOpenApi(routes: readonly RouteDefinition<any, any, any>[], options: { serverUrl?: string } = {}): JsonSchema {
  const components: Record<string, JsonSchema> = {
    ErrorResponse: {
      type: 'object',
      properties: {
        detail: { type: 'string', description: 'A human-readable message' },
        code: { type: 'string', enum: Object.keys(ERROR_CODES), description: 'A machine-readable error code' },
      },
      required: ['detail', 'code'],
    },
    ValidationError: {
      type: 'object',
      properties: {
        loc: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
        msg: { type: 'string' },
        type: { type: 'string' },
      },
      required: ['loc', 'msg', 'type'],
    },
    HTTPValidationError: {
      type: 'object',
      properties: { detail: { type: 'array', items: { $ref: '#/components/schemas/ValidationError' } } },
      required: ['detail'],
    },
  };

  const convert = (schema: z.ZodType, io: 'input' | 'output'): JsonSchema => {
    const raw = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
    const rewritten = JSON.parse(JSON.stringify(raw).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema;
    const { $schema: _ignored, $defs, ...rest } = rewritten as JsonSchema & { $defs?: Record<string, JsonSchema> };
    for (const [name, def] of Object.entries($defs ?? {})) components[name] = def;
    return rest;
  };

  const errorRef = (status: number) => ({
    description: STATUS_TEXT[status] ?? `Status ${status}`,
    content: { 'application/json': { schema: { $ref: status === 422 ? '#/components/schemas/HTTPValidationError' : '#/components/schemas/ErrorResponse' } } },
  });

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = openApiPath(route.path);
    const parameters: unknown[] = [];
    for (const [where, schema] of [['path', route.params], ['query', route.query]] as const) {
      if (!schema) continue;
      const shape = (schema as z.ZodObject).shape as Record<string, z.ZodType>;
      for (const [name, field] of Object.entries(shape)) {
        parameters.push({
          name,
          in: where,
          required: where === 'path' ? true : !field.safeParse(undefined).success,
          schema: convert(field, 'input'),
          ...(field.description ? { description: field.description } : {}),
        });
      }
    }
    for (const header of route.headers ?? []) {
      parameters.push({ name: header.name, in: 'header', required: header.required ?? false, description: header.description, schema: { type: 'string' } });
    }
    const responses: Record<string, unknown> = {};
    for (const [statusText, schema] of Object.entries(route.responses)) {
      const status = Number(statusText);
      if (schema === null || schema === undefined) {
        responses[statusText] = status >= 400 ? errorRef(status) : { description: STATUS_TEXT[status] ?? 'No body' };
      } else if (route.produces && status < 300) {
        responses[statusText] = { description: STATUS_TEXT[status] ?? 'OK', content: { [route.produces]: { schema: convert(schema, 'output') } } };
      } else {
        responses[statusText] = { description: STATUS_TEXT[status] ?? 'OK', content: { 'application/json': { schema: convert(schema, 'output') } } };
      }
    }
    const generic = route.auth === 'public' ? [] : [401, 403];
    // Any route may answer 503 database_unavailable (with Retry-After) while the database is unreachable.
    for (const status of [...(route.errors ?? []), ...generic, 422, 500, 503]) {
      if (!(String(status) in responses)) responses[String(status)] = errorRef(status);
    }
    if (route.rateLimit && !('429' in responses)) responses['429'] = errorRef(429);
    const operation: Record<string, unknown> = {
      operationId: operationId(route),
      summary: route.summary,
      tags: [route.tag],
      security: route.auth === 'public' ? [] : [{ bearerAuth: [] }],
      ...(parameters.length > 0 ? { parameters } : {}),
      responses,
      'x-herald-credential': route.auth,
    };
    if (route.body) {
      operation.requestBody = { required: !route.body.safeParse(undefined).success, content: { 'application/json': { schema: convert(route.body, 'input') } } };
    }
    if (route.streamedBody) {
      const { contentType, itemSchema, description } = route.streamedBody;
      operation.requestBody = { required: true, description, content: { [contentType]: { schema: convert(itemSchema, 'input') } } };
    }
    (paths[path] ??= {})[route.method.toLowerCase()] = operation;
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Herald',
      version: API_VERSION,
      description: 'Self-hosted multi-tenant notification delivery: in-app inbox, email, mobile push and web push.',
    },
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'A service key (sk_...), a console access token, or a contact token, as each route allows (x-herald-credential).',
        },
      },
    },
  };
}

function operationId(route: RouteDefinition<any, any, any>): string {
  const words = route.path.replace(/^\/v1\//, '').split(/[/:_.-]+/).filter(Boolean);
  return [route.method.toLowerCase(), ...words.map((w) => w[0]!.toUpperCase() + w.slice(1))].join('');
}

// The OpenAPI 3.1 document, generated from the route table and the same zod schemas that validate
// requests and (in tests) responses. Named schemas (.meta({ id })) become components.
import { z } from 'zod';
import { ERROR_CODES } from '../base/errors.ts';
import { openApiPath, type RouteDefinition } from './route.ts';

export const API_VERSION = '0.1.0';

type JsonSchema = Record<string, unknown>;

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Validation Error',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function buildOpenApi(
  routes: readonly RouteDefinition<any, any, any>[],
  options: { serverUrl?: string } = {},
): JsonSchema {
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

  // Named schemas are converted twice, as requests take them (io: input) and as responses give them
  // (io: output); the two differ wherever a field has a default (optional in a request, always present
  // in a response) or a transform. A request's named schema keeps the name where both agree, and
  // becomes <Name>Input where they differ (names are settled by nameInputSchemas once all are known).
  const outputSchemas: Record<string, JsonSchema> = {};
  const inputSchemas: Record<string, JsonSchema> = {};
  const convert = (schema: z.ZodType, io: 'input' | 'output', parameter = false): JsonSchema => {
    const raw = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
    const refPrefix = io === 'input' ? INPUT_REF : '#/components/schemas/';
    const rewritten = JSON.parse(JSON.stringify(raw).replaceAll('"#/$defs/', `"${refPrefix}`)) as JsonSchema;
    const { $schema: _ignored, $defs, ...rest } = rewritten as JsonSchema & { $defs?: Record<string, JsonSchema> };
    for (const [name, def] of Object.entries($defs ?? {})) {
      if (io === 'input') inputSchemas[name] = withoutDefaults(def);
      else outputSchemas[name] = def;
    }
    // A parameter keeps its default: generators read it as optional whatever its default.
    return io === 'input' && !parameter ? withoutDefaults(rest) : rest;
  };

  // A 422 is an HTTPValidationError where the request has input to validate; routes that list 422
  // among their errors also answer it as an ErrorResponse (a semantic failure such as an expired link).
  const validationErrorRef = (hasInput: boolean, semantic: boolean) => {
    const validation = { $ref: '#/components/schemas/HTTPValidationError' };
    const error = { $ref: '#/components/schemas/ErrorResponse' };
    const schema = hasInput && semantic ? { anyOf: [validation, error] } : hasInput ? validation : error;
    return { description: STATUS_TEXT[422], content: { 'application/json': { schema } } };
  };
  const errorRef = (status: number) => ({
    description: STATUS_TEXT[status] ?? `Status ${status}`,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } },
  });

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    if (route.notAnOperation) continue;
    const path = openApiPath(route.path);
    const parameters: unknown[] = [];
    for (const [where, schema] of [
      ['path', route.params],
      ['query', route.query],
    ] as const) {
      if (!schema) continue;
      const shape = (schema as z.ZodObject).shape as Record<string, z.ZodType>;
      for (const [name, field] of Object.entries(shape)) {
        parameters.push({
          name,
          in: where,
          required: where === 'path' ? true : !field.safeParse(undefined).success,
          schema: convert(field, 'input', true),
          ...(field.description ? { description: field.description } : {}),
        });
      }
    }
    for (const header of route.headers ?? []) {
      parameters.push({
        name: header.name,
        in: 'header',
        required: header.required ?? false,
        description: header.description,
        schema: { type: 'string' },
      });
    }
    const hasInput = Boolean(route.params || route.query || route.body || route.streamedBody);
    const routeErrors = route.errors ?? [];
    const responses: Record<string, unknown> = {};
    for (const [statusText, schema] of Object.entries(route.responses)) {
      const status = Number(statusText);
      if (schema === null || schema === undefined) {
        responses[statusText] =
          status === 422
            ? validationErrorRef(hasInput, true)
            : status >= 400
              ? errorRef(status)
              : { description: STATUS_TEXT[status] ?? 'No body' };
      } else if (route.produces && status < 300) {
        responses[statusText] = {
          description: STATUS_TEXT[status] ?? 'OK',
          content: { [route.produces]: { schema: convert(schema, 'output') } },
        };
      } else {
        responses[statusText] = {
          description: STATUS_TEXT[status] ?? 'OK',
          content: { 'application/json': { schema: convert(schema, 'output') } },
        };
      }
    }
    const generic = route.auth === 'public' ? [] : [401, 403];
    // Any route may answer 503 database_unavailable (with Retry-After) while the database is unreachable.
    for (const status of [...routeErrors, ...generic, ...(hasInput ? [422] : []), 500, 503]) {
      if (String(status) in responses) continue;
      responses[String(status)] =
        status === 422 ? validationErrorRef(hasInput, routeErrors.includes(422)) : errorRef(status);
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
      operation.requestBody = {
        required: !route.body.safeParse(undefined).success,
        content: { 'application/json': { schema: convert(route.body, 'input') } },
      };
    }
    if (route.streamedBody) {
      const { contentType, itemSchema, description } = route.streamedBody;
      operation.requestBody = {
        required: true,
        description,
        content: { [contentType]: { schema: convert(itemSchema, 'input') } },
      };
    }
    (paths[path] ??= {})[route.method.toLowerCase()] = operation;
  }

  const document = {
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
          description:
            'A service key (sk_...), a console access token, or a contact token, as each route allows (x-herald-credential).',
        },
      },
    },
  };
  const inputNames = nameInputSchemas(inputSchemas, outputSchemas);
  for (const [name, schema] of Object.entries(inputSchemas)) components[inputNames.get(name)!] = schema;
  Object.assign(components, outputSchemas);
  return JSON.parse(
    JSON.stringify(document).replace(
      INPUT_REF_PATTERN,
      (_ref, name: string) => `#/components/schemas/${inputNames.get(name)}`,
    ),
  ) as JsonSchema;
}

/** Where a request's schema refers to a named schema, before its name is settled. */
const INPUT_REF = '#/components/input-schemas/';
const INPUT_REF_PATTERN = /#\/components\/input-schemas\/([A-Za-z0-9_]+)/g;

/**
 * The component name of each named request schema: its own name, unless a response schema of that
 * name differs from it (then <Name>Input). Whether two forms agree depends on the names of the schemas
 * they refer to, so names are settled until none changes.
 */
function nameInputSchemas(
  inputs: Record<string, JsonSchema>,
  outputs: Record<string, JsonSchema>,
): Map<string, string> {
  const names = new Map(Object.keys(inputs).map((name) => [name, name]));
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, schema] of Object.entries(inputs)) {
      if (names.get(name) !== name || !(name in outputs)) continue;
      const asNamed = JSON.stringify(schema).replace(
        INPUT_REF_PATTERN,
        (_ref, target: string) => `#/components/schemas/${names.get(target)}`,
      );
      if (asNamed !== JSON.stringify(outputs[name])) {
        names.set(name, `${name}Input`);
        changed = true;
      }
    }
  }
  return names;
}

/**
 * A request schema without `default` keywords, the default moved into the description: generators
 * (openapi-typescript's defaults among them) read a default as "always present", which holds for a
 * response and not for a request, where a field with a default may be left out.
 */
function withoutDefaults(schema: unknown): JsonSchema {
  if (Array.isArray(schema)) return schema.map(withoutDefaults) as unknown as JsonSchema;
  if (typeof schema !== 'object' || schema === null) return schema as JsonSchema;
  const result: JsonSchema = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (keyword === 'default') continue;
    if (keyword === 'properties' || keyword === 'patternProperties' || keyword === '$defs') {
      result[keyword] = Object.fromEntries(
        Object.entries(value as JsonSchema).map(([name, sub]) => [name, withoutDefaults(sub)]),
      );
    } else if (keyword === 'enum' || keyword === 'const' || keyword === 'examples' || keyword === 'required') {
      result[keyword] = value;
    } else {
      result[keyword] = withoutDefaults(value);
    }
  }
  if ('default' in schema) {
    const note = `Default: ${JSON.stringify((schema as JsonSchema).default)}.`;
    result.description = typeof result.description === 'string' ? `${result.description} (${note.slice(0, -1)})` : note;
  }
  return result;
}

function operationId(route: RouteDefinition<any, any, any>): string {
  const words = route.path
    .replace(/^\/v1\//, '')
    .split(/[/:_.-]+/)
    .filter(Boolean);
  return [route.method.toLowerCase(), ...words.map((w) => w[0]!.toUpperCase() + w.slice(1))].join('');
}

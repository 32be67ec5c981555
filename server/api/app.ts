// The h3 application: registers every route of server/api/routes/index.ts through one wrapper that
// authenticates, validates, rate-limits, calls the handler and writes the response, then adds the
// cross-cutting headers (request id, CORS, security) and one access log line per request.
import { randomUUID } from 'node:crypto';
import { H3, getRouterParams, type H3Event } from 'h3';
import { AppError, ValidationFailure } from '../base/errors.ts';
import { assertAllowed, rateLimitHeaders, take } from '../base/rate-limit.ts';
import { runAudited } from './audit.ts';
import { authenticate, authorize, type Credential } from './auth-rules.ts';
import { readJsonBody } from './body.ts';
import { clientIp } from './client-ip.ts';
import { errorResponse, errorToResponse, json } from './respond.ts';
import { Reply, type ApiContext, type AuthRule, type RouteContext, type RouteDefinition } from './route.ts';
import { issuesOf, parseInput } from '../base/validation.ts';
import { isDatabaseUnavailable, OUTAGE_RETRY_AFTER_SECONDS } from '../base/db/availability.ts';
import { metricsOf } from '../base/metrics/registry.ts';
import { tenantOriginsOf } from '../resources/tenants.ts';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;
const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, Idempotency-Key, Last-Event-ID, X-Request-Id';
const CORS_EXPOSE_HEADERS =
  'Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, RateLimit-Policy, X-Request-Id, Location';

export function createApp(runtime: ApiContext, routes: RouteDefinition<any, any, any>[]): H3 {
  const app = new H3({
    // Only reached for what no route wrapper handled: unknown paths, wrong methods, malformed URLs.
    onError: (error, event) =>
      finish(runtime, event, fallbackResponse(error, event, routes, runtime), null, performance.now()),
  });
  for (const route of routes) {
    app.on(route.method, route.path, (event) => handle(runtime, route, event, routes));
  }
  // Preflight for every path, answered before routing; it allows what the route asked for allows.
  app.on('OPTIONS', '/**', (event) => preflight(runtime, event, routes));
  return app;
}

/** A preflight: 204, with the grant grantCors decides (it may read the tenants' origins: 503 when it cannot). */
async function preflight(
  runtime: ApiContext,
  event: H3Event,
  routes: RouteDefinition<any, any, any>[],
): Promise<Response> {
  const started = performance.now();
  const route = preflightRoute(event, routes);
  let response = new Response(null, { status: 204 });
  try {
    await grantCors(runtime, event, route, null);
  } catch (error) {
    response = errorToResponse(outageOr(runtime, error), runtime.logger, { request_id: requestIdOf(event) });
  }
  return finish(runtime, event, response, route, started);
}

async function handle(
  runtime: ApiContext,
  route: RouteDefinition<any, any, any>,
  event: H3Event,
  routes: RouteDefinition<any, any, any>[],
): Promise<Response> {
  const started = performance.now();
  const requestId = requestIdOf(event);
  const ctx: RouteContext = {
    runtime,
    em: runtime.orm.em.fork(),
    event,
    auth: null,
    params: {},
    query: {},
    body: undefined,
    ip: clientIp(event, runtime.config.trustedProxies),
    requestId,
    responseHeaders: {},
    routes,
  };
  let response: Response;
  try {
    await grantCors(runtime, event, route, null);
    if (route.auth !== 'public') {
      ctx.auth = await authenticate(runtime, ctx.em, event.req.headers.get('authorization'));
      await grantCors(runtime, event, route, ctx.auth);
      authorize(route, ctx.auth);
    }
    ctx.params = route.params ? parseInput('path', route.params, getRouterParams(event, { decode: true })) : {};
    ctx.query = route.query ? parseInput('query', route.query, Object.fromEntries(event.url.searchParams)) : {};
    if (route.body)
      ctx.body = parseInput(
        'body',
        route.body,
        await readJsonBody(event.req, runtime.config.maxBodyBytes, runtime.config.requestBodyTimeoutMs),
      );
    if (route.rateLimit) {
      const results = await take(ctx.em, runtime.clock, await route.rateLimit(ctx));
      Object.assign(ctx.responseHeaders, rateLimitHeaders(results));
      assertAllowed(results);
    }
    const result = await runAudited(route, ctx);
    if (!(result instanceof Response))
      return finish(
        runtime,
        event,
        jsonResponse(runtime, event, route, result, ctx.responseHeaders),
        route,
        started,
        true,
      );
    for (const [k, v] of Object.entries(ctx.responseHeaders)) result.headers.set(k, v);
    response = result;
  } catch (error) {
    response = errorToResponse(outageOr(runtime, error), runtime.logger, {
      request_id: requestId,
      route: `${route.method} ${route.path}`,
    });
    for (const [k, v] of Object.entries(ctx.responseHeaders)) if (!response.headers.has(k)) response.headers.set(k, v);
  }
  return finish(runtime, event, response, route, started);
}

/** A database outage is a 503 with Retry-After (logged once per outage), not an internal error. */
function outageOr(runtime: ApiContext, error: unknown): unknown {
  if (error instanceof AppError || error instanceof ValidationFailure || !isDatabaseUnavailable(error)) return error;
  runtime.availability.markDown(error);
  return new AppError('database_unavailable', 'The database is unavailable; retry shortly', {
    headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) },
  });
}

/**
 * A handler's JSON result as a response, the standard headers included: given to the response as it
 * is made, they never build the web Headers object that setting them afterwards would.
 */
function jsonResponse(
  runtime: ApiContext,
  event: H3Event,
  route: RouteDefinition<any, any, any>,
  result: unknown,
  headers: Record<string, string>,
): Response {
  const status = result instanceof Reply ? result.status : defaultStatus(route);
  const body = result instanceof Reply ? result.body : result;
  const { defaults, always } = standardHeaders(runtime, event, route);
  const extra = mergeHeaders(defaults, headers, result instanceof Reply ? result.headers : {}, always);
  if (runtime.options.validateResponses) checkResponse(route, status, body);
  return json(status, status === 204 ? undefined : body, extra);
}

/** Header sets merged as a Headers object would merge them: names case-insensitive, later sets winning. */
function mergeHeaders(...sets: Record<string, string>[]): Record<string, string> {
  const merged: Record<string, string> = {};
  const names = new Map<string, string>();
  for (const set of sets) {
    for (const [name, value] of Object.entries(set)) {
      const lower = name.toLowerCase();
      const earlier = names.get(lower);
      if (earlier !== undefined) delete merged[earlier];
      names.set(lower, name);
      merged[name] = value;
    }
  }
  return merged;
}

function defaultStatus(route: RouteDefinition<any, any, any>): number {
  const success = Object.keys(route.responses)
    .map(Number)
    .filter((s) => s >= 200 && s < 300);
  return success[0] ?? 200;
}

/** In tests, every response body must match its documented schema: the OpenAPI document cannot lie. */
function checkResponse(route: RouteDefinition<any, any, any>, status: number, body: unknown): void {
  if (!(status in route.responses))
    throw new Error(`${route.method} ${route.path} answered undocumented status ${status}`);
  const schema = route.responses[status];
  if (schema === null || schema === undefined) {
    if (body !== undefined && body !== null)
      throw new Error(`${route.method} ${route.path} ${status} must have no body`);
    return;
  }
  const result = schema.safeParse(body);
  if (!result.success) {
    throw new Error(
      `${route.method} ${route.path} ${status} does not match its schema: ${JSON.stringify(issuesOf('body', result.error))}`,
    );
  }
}

/** 404 for unknown paths, 405 (with Allow) for a known path called with another method. */
function fallbackResponse(
  error: unknown,
  event: H3Event,
  routes: RouteDefinition<any, any, any>[],
  runtime: ApiContext,
): Response {
  const status = (error as { status?: number }).status;
  if (status === 404 || status === 405) {
    const allowed = routes.filter((r) => pathMatches(r.path, event.url.pathname)).map((r) => r.method);
    if (allowed.length > 0) {
      return errorResponse(405, 'method_not_allowed', `Method ${event.req.method} is not allowed here`, {
        Allow: [...new Set(allowed)].join(', '),
      });
    }
    return errorResponse(404, 'route_not_found', `No route for ${event.req.method} ${event.url.pathname}`);
  }
  if (status === 400) return json(422, { detail: [{ loc: ['path'], msg: 'Malformed URL', type: 'url_invalid' }] });
  return errorToResponse(
    error instanceof AppError || error instanceof ValidationFailure
      ? error
      : ((error as { cause?: unknown }).cause ?? error),
    runtime.logger,
    {
      request_id: requestIdOf(event),
    },
  );
}

const patternCache = new Map<string, RegExp>();
function pathMatches(pattern: string, path: string): boolean {
  let re = patternCache.get(pattern);
  if (!re) {
    re = new RegExp('^' + pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+') + '/?$');
    patternCache.set(pattern, re);
  }
  return re.test(path);
}

function requestIdOf(event: H3Event): string {
  const existing = (event.context as { requestId?: string }).requestId;
  if (existing) return existing;
  const incoming = event.req.headers.get('x-request-id');
  const id = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
  (event.context as { requestId?: string }).requestId = id;
  return id;
}

/**
 * The headers every response carries: `defaults` where the response sets none of its own (framing,
 * content security, caching), `always` over whatever it sets (request id, security, CORS).
 */
function standardHeaders(
  runtime: ApiContext,
  event: H3Event,
  route: RouteDefinition<any, any, any> | null,
): { defaults: Record<string, string>; always: Record<string, string> } {
  const always: Record<string, string> = {
    'X-Request-Id': requestIdOf(event),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  };
  if (runtime.config.publicUrl?.startsWith('https://')) always['Strict-Transport-Security'] = 'max-age=31536000';
  Object.assign(always, corsHeaders(event, route));
  return {
    defaults: {
      'X-Frame-Options': 'DENY',
      'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
      'Cache-Control': 'no-store',
    },
    always,
  };
}

/**
 * Adds the standard headers to a response made elsewhere (unless `stamped`: made with them), and
 * writes the access log line.
 */
function finish(
  runtime: ApiContext,
  event: H3Event,
  response: Response,
  route: RouteDefinition<any, any, any> | null,
  started: number,
  stamped = false,
): Response {
  if (!stamped) {
    const h = response.headers;
    const { defaults, always } = standardHeaders(runtime, event, route);
    for (const [k, v] of Object.entries(defaults)) if (!h.has(k)) h.set(k, v);
    for (const [k, v] of Object.entries(always)) {
      if (k === 'Vary') h.append(k, v);
      else h.set(k, v);
    }
  }
  // The route pattern, not the path: paths can carry link tokens (/auth/invitations/{token}).
  const ms = performance.now() - started;
  const pattern = route ? route.path : '(unmatched)';
  metricsOf(runtime).observeRequest(event.req.method, pattern, response.status, ms / 1000);
  runtime.logger.info('request', {
    request_id: requestIdOf(event),
    method: event.req.method,
    route: pattern,
    status: response.status,
    ms: Math.round(ms * 10) / 10,
  });
  return response;
}

/**
 * Routes that other origins may call: the ones a contact token reaches (the inbox, the stream, push
 * subscriptions, preferences), called by the browser SDK from a tenant's own pages. Everything else
 * (sign-in, the console's management routes, service-key routes) answers its own origin only: the
 * console is served by Herald itself, and service keys belong on servers.
 */
const CROSS_ORIGIN_RULES: ReadonlySet<AuthRule> = new Set<AuthRule>(['contact', 'either', 'any']);

/** The route a preflight asks about (its path and Access-Control-Request-Method), if any. */
function preflightRoute(
  event: H3Event,
  routes: RouteDefinition<any, any, any>[],
): RouteDefinition<any, any, any> | null {
  const method = event.req.headers.get('access-control-request-method')?.toUpperCase();
  return routes.find((r) => r.method === method && pathMatches(r.path, event.url.pathname)) ?? null;
}

type CorsState = { corsGrant?: string | null };

/**
 * Decides what Access-Control-Allow-Origin the response carries (corsHeaders writes it), called once
 * before the credential is known and again with it. The install's `corsOrigins` grant on their own
 * ('*' answers '*'); past them, a contact token's request is granted its tenant's own origins. A
 * preflight carries no credential, so its tenant is unknown: it is granted any origin some tenant
 * lists, and the actual request then answers only the token's tenant's origins, so a page can read
 * answers only for tokens of its own tenant. Service keys and console tokens on these routes get the
 * install's origins only: a tenant's list is for its contacts' browsers.
 */
async function grantCors(
  runtime: ApiContext,
  event: H3Event,
  route: RouteDefinition<any, any, any> | null,
  credential: Credential | null,
): Promise<void> {
  const state = event.context as CorsState;
  const origin = event.req.headers.get('origin');
  if (state.corsGrant || !origin || !route || !CROSS_ORIGIN_RULES.has(route.auth)) return;
  const install = runtime.config.corsOrigins;
  if (install.includes('*') || install.includes(origin)) {
    state.corsGrant = install.includes('*') ? '*' : origin;
  } else if (event.req.method === 'OPTIONS') {
    if ((await tenantOriginsOf(runtime).ofAnyTenant()).has(origin)) state.corsGrant = origin;
  } else if (credential?.kind === 'contact') {
    if ((await tenantOriginsOf(runtime).ofTenant(credential.tenantId)).has(origin)) state.corsGrant = origin;
  }
}

/**
 * CORS response headers of a cross-origin route: `Vary: Origin` always (the answer depends on it),
 * the grant grantCors decided, none of the Access-Control headers without one.
 */
function corsHeaders(event: H3Event, route: RouteDefinition<any, any, any> | null): Record<string, string> {
  if (!route || !CROSS_ORIGIN_RULES.has(route.auth)) return {};
  const grant = (event.context as CorsState).corsGrant;
  if (!grant) return { Vary: 'Origin' };
  const headers: Record<string, string> = {
    'Access-Control-Allow-Origin': grant,
    Vary: 'Origin',
    'Access-Control-Expose-Headers': CORS_EXPOSE_HEADERS,
  };
  if (event.req.method === 'OPTIONS') {
    headers['Access-Control-Allow-Methods'] = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';
    headers['Access-Control-Allow-Headers'] = CORS_ALLOW_HEADERS;
    headers['Access-Control-Max-Age'] = '600';
  }
  return headers;
}

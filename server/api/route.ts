// A route is data: method, path, credential rule, zod schemas for its input and every response, and a
// thin handler. The app registers routes from this data, and the OpenAPI document is generated from
// the very same schemas, so validation and documentation cannot drift apart.
import type { H3Event } from 'h3';
import type { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ChannelContext } from '../channels/types.ts';
import type { StreamContext } from '../channels/inbox/hub.ts';
import type { Credential } from './auth-rules.ts';
import type { RateCheck } from '../base/rate-limit.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Who may call a route.
 * - public: no credential.
 * - user: a console access token (the route itself judges membership, e.g. /auth/tenants/{id}).
 * - management: a service key, or a console access token whose user is admin or higher in its tenant.
 * - service: a service key only.
 * - contact: a contact token only.
 * - either: a tenant credential (service key or console admin) or a contact token.
 * - any: any valid credential of the tenant, no role gate (e.g. the web-push public key).
 */
export type AuthRule = 'public' | 'user' | 'management' | 'service' | 'contact' | 'either' | 'any';

/** A response body schema, or null for "no body" (204). */
export type ResponseSchemas = Partial<Record<number, z.ZodType | null>>;

/** What the routes get of the process: the context, its SMTP pool and stream hub, and the response check of tests. */
export interface ApiContext extends ChannelContext, StreamContext {
  readonly options: { readonly validateResponses?: boolean };
}

export interface RouteContext<P = any, Q = any, B = any> {
  runtime: ApiContext;
  /** A request-scoped entity manager (its own identity map). */
  em: EntityManager;
  event: H3Event;
  /** The verified credential; for `public` routes, null. */
  auth: Credential | null;
  params: P;
  query: Q;
  body: B;
  /** The client address that counts for per-IP limits (see config.trustedProxies). */
  ip: string;
  requestId: string;
  /** Headers to add to the response (e.g. RateLimit-* from the route's limits). */
  responseHeaders: Record<string, string>;
  /** Every route the app serves (what GET /v1/openapi.json describes). */
  routes: readonly RouteDefinition<any, any, any>[];
}

/** A handler result with an explicit status or headers; a plain value answers the route's first 2xx. */
export class Reply {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Record<string, string>;
  constructor(status: number, body: unknown, headers: Record<string, string> = {}) {
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

export function reply(status: number, body?: unknown, headers?: Record<string, string>): Reply {
  return new Reply(status, body, headers);
}

/**
 * How a write is audited. Every POST/PUT/PATCH/DELETE route a console user or a service key can call
 * is audited by default, with an action and target derived from its path (server/api/audit.ts);
 * this field names them where the path says it badly, or exempts a route that changes nothing a
 * tenant manages (with the reason).
 */
export type AuditSpec =
  | {
      action?: string;
      target?: string;
      /** The target's id; by default the last path parameter, else the result's id or key. */
      id?: (ctx: RouteContext, result: unknown) => string | null;
      /** The tenant of the write; by default the path's tenant_id, else the credential's tenant. */
      tenant?: (ctx: RouteContext, result: unknown) => string | null;
      /** What the entry records as changed; by default the request body (secret-looking fields masked). */
      changes?: (ctx: RouteContext, result: unknown) => unknown;
    }
  | { exempt: string };

export interface RouteDefinition<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
> {
  method: HttpMethod;
  /** h3 path with :params, e.g. /v1/brandings/:key */
  path: string;
  summary: string;
  tag: string;
  auth: AuthRule;
  /**
   * Open to a user whose tenant requires a second factor they have not set up yet (the enrolment
   * routes, the tenant switcher); every other route answers them 403 mfa_enrolment_required.
   */
  openDuringMfaEnrolment?: true;
  params?: P;
  query?: Q;
  body?: B;
  /** Every success and route-specific error status. Errors map to ErrorResponse unless given a schema. */
  responses: ResponseSchemas;
  /** Statuses answered with ErrorResponse (route-specific: 402, 403, 404, 409, 503 ...). */
  errors?: number[];
  /**
   * A body the handler reads itself as it arrives (never buffered whole): its media type and the schema
   * of one item of it (one line of NDJSON), for the OpenAPI document.
   */
  streamedBody?: { contentType: string; itemSchema: z.ZodType; description: string };
  /** Non-JSON success content (e.g. text/event-stream); the handler returns a Response. */
  produces?: string;
  /** Extra request headers the route reads (documented in OpenAPI). */
  headers?: Array<{ name: string; description: string; required?: boolean }>;
  audit?: AuditSpec;
  /**
   * Why the route is left out of the OpenAPI document: a browser's way in (GET /), not an operation
   * a client calls. Every other route is documented.
   */
  notAnOperation?: string;
  /** Buckets to charge before the handler runs (they may use the parsed body and the credential). */
  rateLimit?: (ctx: RouteContext<z.infer<P>, z.infer<Q>, z.infer<B>>) => Promise<RateCheck[]> | RateCheck[];
  handler: (ctx: RouteContext<z.infer<P>, z.infer<Q>, z.infer<B>>) => Promise<unknown> | unknown;
}

export function defineRoute<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
>(definition: RouteDefinition<P, Q, B>): RouteDefinition<P, Q, B> {
  return definition;
}

/** /v1/brandings/:key -> /v1/brandings/{key} */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

// Audit of management writes in the route layer: an audited route's handler and its audit row run in
// one transaction (the handler's EntityManager is the transaction's), so a write is never without its
// entry and a failed write leaves none. The action and target come from the route's path unless the
// route's `audit` field names them: POST /v1/brandings -> brand.create, PUT /v1/brandings/:key/values
// -> brand.values.update, POST /v1/notification-types/:key/restore -> notification_type.restore.
import { recordAudit, type AuditActor } from '../resources/audit-log.ts';
import type { Credential } from './auth-rules.ts';
import { Reply, type RouteContext, type RouteDefinition } from './route.ts';

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const AUDITED_RULES = new Set(['management', 'user', 'service', 'either', 'any']);

// Path words whose singular is not the word less its "s".
const NOUNS: Record<string, string> = {
  brandings: 'brand',
  deliveries: 'delivery',
  'push-transport': 'push_transport',
};

function noun(segment: string): string {
  const word =
    NOUNS[segment] ??
    (segment.endsWith('ies')
      ? segment.slice(0, -3) + 'y'
      : segment.endsWith('ss')
        ? segment
        : segment.replace(/s$/, ''));
  return word.replace(/-/g, '_');
}

/** Whether a route's writes must be audited (the route-table test holds every such route to it). */
export function isAuditedRoute(route: RouteDefinition<any, any, any>): boolean {
  if (!WRITE_METHODS.has(route.method) || !route.path.startsWith('/v1/') || !AUDITED_RULES.has(route.auth))
    return false;
  return !(route.audit && 'exempt' in route.audit);
}

/**
 * The action and target kind of an audited route, e.g. { action: 'brand.values.update', target: 'brand' }.
 * A POST to a plural word after an id creates in a sub-collection (POST /v1/contacts/:id/push-subscriptions
 * -> push_subscription.create), whose target id is the created object's, not the path's.
 */
export function auditNames(route: RouteDefinition<any, any, any>): {
  action: string;
  target: string;
  createsChild: boolean;
} {
  const spec = route.audit && !('exempt' in route.audit) ? route.audit : {};
  const segments = route.path
    .split('/')
    .slice(2)
    .filter((s) => s !== 'auth');
  const lastParam = segments.findLastIndex((s) => s.startsWith(':'));
  const trailing = (lastParam < 0 ? segments.slice(1) : segments.slice(lastParam + 1)).filter(
    (s) => !s.startsWith(':'),
  );
  const createsChild = route.method === 'POST' && lastParam > 0 && trailing.length === 1 && trailing[0]!.endsWith('s');
  const resource = createsChild ? trailing[0]! : lastParam > 0 ? segments[lastParam - 1]! : segments[0]!;
  const target = spec.target ?? noun(resource);
  const verb =
    route.method === 'DELETE'
      ? 'delete'
      : route.method === 'POST' && (trailing.length === 0 || createsChild)
        ? 'create'
        : 'update';
  const words = createsChild ? [] : trailing.map((w) => w.replace(/-/g, '_'));
  let action: string;
  if (words.length === 0) action = `${target}.${verb}`;
  else if (route.method === 'POST') action = `${target}.${words.join('.')}`;
  else action = `${target}.${words.join('.')}.${verb}`;
  return { action: spec.action ?? action, target, createsChild };
}

function actorOf(auth: Credential): AuditActor | null {
  if (auth.kind === 'user') return { kind: 'user', id: auth.userId };
  if (auth.kind === 'service') return { kind: 'service_key', id: auth.apiKeyId };
  if (auth.kind === 'host') return { kind: 'cli', id: auth.actorId };
  return null;
}

function idOf(value: unknown): string | null {
  if (!value || typeof value !== 'object') return null;
  const v = value as Record<string, unknown>;
  for (const field of ['id', 'key', 'domain', 'user_id', 'event_id', 'broadcast_id', 'email']) {
    if (typeof v[field] === 'string') return v[field] as string;
  }
  return null;
}

/** Runs the handler; for an audited write by a console user, a service key or the host operator, in one transaction with its audit row. */
export async function runAudited(route: RouteDefinition<any, any, any>, ctx: RouteContext): Promise<unknown> {
  const actor = ctx.auth ? actorOf(ctx.auth) : null;
  if (!actor || !isAuditedRoute(route)) return route.handler(ctx);
  const spec = route.audit && !('exempt' in route.audit) ? route.audit : {};
  const { action, target, createsChild } = auditNames(route);
  const outer = ctx.em;
  try {
    return await outer.transactional(async (tx) => {
      ctx.em = tx;
      const result = await route.handler(ctx);
      const body = result instanceof Reply ? result.body : result;
      const params = Object.values(ctx.params as Record<string, unknown>).filter(
        (v): v is string => typeof v === 'string',
      );
      await recordAudit(tx, {
        tenantId: spec.tenant
          ? spec.tenant(ctx, body)
          : ((ctx.params as { tenant_id?: string }).tenant_id ?? ctx.auth!.tenantId),
        actor,
        action,
        target: {
          kind: target,
          id: spec.id ? spec.id(ctx, body) : createsChild ? idOf(body) : (params[params.length - 1] ?? idOf(body)),
        },
        ip: ctx.ip,
        requestId: ctx.requestId,
        changes: spec.changes ? spec.changes(ctx, body) : (ctx.body ?? null),
      });
      return result;
    });
  } finally {
    ctx.em = outer;
  }
}

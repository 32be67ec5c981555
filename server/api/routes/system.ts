// Liveness, readiness and the API description.
import { z } from 'zod';
import { defineRoute, reply } from '../route.ts';
import { buildOpenApi } from '../openapi.ts';
import { publicBaseUrl } from '../../base/config.ts';
import { probeDatabase, probeQueueSchema } from '../../base/db/probes.ts';

const Health = z.object({ status: z.literal('ok') }).meta({ id: 'HealthResponse' });
const Unhealthy = z
  .object({ status: z.literal('unavailable'), database: z.literal(false) })
  .meta({ id: 'UnhealthyResponse' });
const Readiness = z
  .object({ status: z.enum(['ready', 'unavailable']), database: z.boolean(), queue: z.boolean() })
  .meta({ id: 'ReadinessResponse' });

export const healthz = defineRoute({
  method: 'GET',
  path: '/healthz',
  summary:
    'Liveness: the process is up and its database answers (503 during an outage or while the embedded database restarts)',
  tag: 'system',
  auth: 'public',
  responses: { 200: Health, 503: Unhealthy },
  handler: ({ runtime }) => {
    const embedded = runtime.db.embedded;
    const down = !runtime.availability.available || (embedded !== null && embedded.state !== 'running');
    return down ? reply(503, { status: 'unavailable' as const, database: false as const }) : { status: 'ok' as const };
  },
});

export const readyz = defineRoute({
  method: 'GET',
  path: '/readyz',
  summary: 'Readiness: the database and the job queue are reachable',
  tag: 'system',
  auth: 'public',
  responses: { 200: Readiness, 503: Readiness },
  handler: async ({ runtime, em }) => {
    const probe = async (fn: () => Promise<unknown>) => {
      try {
        await withTimeout(fn(), 2000);
        return true;
      } catch {
        return false;
      }
    };
    const database = await probe(() => probeDatabase(em));
    if (database) runtime.availability.markUp();
    const queue = await probe(async () => {
      if (!runtime.boss) throw new Error('queue not started');
      await runtime.boss.getQueues();
      await probeQueueSchema(em);
    });
    const ready = database && queue;
    return reply(ready ? 200 : 503, { status: ready ? 'ready' : 'unavailable', database, queue });
  },
});

export const openapi = defineRoute({
  method: 'GET',
  path: '/v1/openapi.json',
  summary: 'This API, described in OpenAPI 3.1',
  tag: 'system',
  auth: 'public',
  responses: { 200: z.record(z.string(), z.unknown()) },
  handler: ({ runtime, routes }) => buildOpenApi(routes, { serverUrl: publicBaseUrl(runtime.config) }),
});

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timeout')), ms);
    promise.then(
      (v) => (clearTimeout(timer), resolve(v)),
      (e) => (clearTimeout(timer), reject(e)),
    );
  });
}

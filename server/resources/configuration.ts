// Configuration as code: a tenant's configuration as one document (export), and a document made the
// tenant's configuration (apply): the plan (create, update, delete per entry; deletions only with
// prune) applied in one transaction through each resource's own service, so every rule of the API
// holds. A dry run applies the plan too and rolls it back, so it reports what would fail. A second
// apply of the same document plans nothing.
import type { EntityManager } from '@mikro-orm/postgresql';
import { isDeepStrictEqual } from 'node:util';
import { AppError, ValidationFailure } from '../base/errors.ts';
import { queryOne } from '../base/db/sql.ts';
import type { Context } from '../base/context.ts';
import type {
  ApplyConfigurationRequest,
  ConfigurationChange,
  ConfigurationDocument,
  ConfigurationPlanResponse,
} from '../schemas/configuration.ts';
import { configurationKinds } from './configuration-kinds/index.ts';
import type { KindContext } from './configuration-kinds/types.ts';

const FIND_TENANT_DEFAULTS = `SELECT b.key AS brand_key, t.default_language AS language FROM tenants t
  JOIN brands b ON b.tenant_id = t.id AND b.is_default WHERE t.id = $1`;

const LOCK_TENANT = `SELECT id FROM tenants WHERE id = $1 FOR UPDATE`;

async function contextOf(runtime: Context, tx: EntityManager, tenantId: string): Promise<KindContext> {
  const row = await queryOne<{ brand_key: string; language: string }>(tx, FIND_TENANT_DEFAULTS, [tenantId]);
  if (!row) throw new AppError('not_found', 'Tenant not found');
  return { runtime, tx, tenantId, defaultBrandKey: row.brand_key, defaultLanguage: row.language };
}

const byId = (id: (entry: any) => string) => (a: unknown, b: unknown) => (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0);

export async function exportConfiguration(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
): Promise<ConfigurationDocument> {
  return em.transactional(async (tx) => {
    const ctx = await contextOf(runtime, tx, tenantId);
    const document: Record<string, unknown> = { version: 1 };
    for (const kind of configurationKinds) document[kind.name] = (await kind.read(ctx)).sort(byId(kind.id));
    return document as ConfigurationDocument;
  });
}

/** Thrown inside the transaction of a dry run, to roll back what it did. */
class DryRunRollback extends Error {}

interface Step {
  change: ConfigurationChange;
  /** Where the entry is in the document (loc of errors), null for deletions. */
  index: number | null;
  run: () => Promise<void>;
}

export async function applyConfiguration(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  request: ApplyConfigurationRequest,
): Promise<ConfigurationPlanResponse> {
  let changes: ConfigurationChange[] = [];
  try {
    await em.transactional(async (tx) => {
      // One apply of a tenant at a time: the plan is made from what the tenant has when it runs.
      await queryOne(tx, LOCK_TENANT, [tenantId]);
      const ctx = await contextOf(runtime, tx, tenantId);
      const steps = await plan(ctx, request);
      changes = steps.map((s) => s.change);
      for (const step of steps) await runStep(step);
      if (request.dry_run) throw new DryRunRollback();
    });
  } catch (error) {
    if (!(error instanceof DryRunRollback)) throw error;
  }
  return { changes, applied: !request.dry_run && changes.length > 0 };
}

async function plan(ctx: KindContext, request: ApplyConfigurationRequest): Promise<Step[]> {
  const deletions: Step[] = [];
  const writes: Step[] = [];
  for (const kind of configurationKinds) {
    const entries: unknown[] = request.document[kind.name as keyof ConfigurationDocument] as unknown[];
    const desired = new Map<string, { entry: any; index: number }>();
    const issues = entries.flatMap((raw, index) => {
      const entry = kind.normalise(raw, ctx);
      const id = kind.id(entry);
      if (desired.has(id)) {
        return [
          {
            loc: ['body', 'document', kind.name, index],
            msg: `${id} is listed twice (first at index ${desired.get(id)!.index})`,
            type: 'duplicate',
          },
        ];
      }
      desired.set(id, { entry, index });
      return [];
    });
    if (issues.length > 0) throw new ValidationFailure(issues);
    const current = new Map<string, any>();
    for (const entry of await kind.read(ctx)) {
      const id = kind.id(entry);
      // Two webhook endpoints may share a URL, which names an endpoint here: which to change is unknown.
      if (current.has(id))
        throw new AppError(
          'conflict',
          `${kind.name} ${id}: the tenant has more than one by that name, so which one the document means is unknown; delete all but one first`,
        );
      current.set(id, entry);
    }
    for (const [id, { entry, index }] of desired) {
      const existing = current.get(id);
      if (!existing) {
        writes.push({
          change: { kind: kind.name, action: 'create', id, fields: [] },
          index,
          run: () => kind.create(ctx, entry),
        });
        continue;
      }
      // Both sides' fields: an optional field the document leaves out (a workflow) is removed.
      const fields = [...new Set([...Object.keys(entry), ...Object.keys(existing)])].filter(
        (field) => !isDeepStrictEqual(canonical(entry[field]), canonical(existing[field])),
      );
      if (fields.length > 0)
        writes.push({
          change: { kind: kind.name, action: 'update', id, fields },
          index,
          run: () => kind.update(ctx, existing, entry, fields),
        });
    }
    if (!request.prune) continue;
    const removed = [...current]
      .filter(([id, entry]) => !desired.has(id) && (!kind.prunable || kind.prunable(entry, ctx)))
      .sort(([a], [b]) => (a < b ? -1 : 1));
    deletions.unshift(
      ...removed.map(([id, entry]): Step => ({
        change: { kind: kind.name, action: 'delete', id, fields: [] },
        index: null,
        run: () => kind.remove(ctx, entry),
      })),
    );
  }
  // Deletions first, the last kind's first (templates before their brands and types), then writes in kind order.
  return [...deletions, ...writes];
}

/** Key order does not make a difference (jsonb keeps its own order). */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, canonical(v)]),
    );
  }
  return value;
}

/** Runs one step; its errors name the document entry they come from. */
async function runStep(step: Step): Promise<void> {
  const { kind, action, id } = step.change;
  try {
    await step.run();
  } catch (error) {
    const where = step.index === null ? ['body', 'document', kind] : ['body', 'document', kind, step.index];
    if (error instanceof ValidationFailure) {
      throw new ValidationFailure(
        error.issues.map((issue) => ({
          ...issue,
          // The service's loc is rooted at its request body: only that root goes (a field may be named "body").
          loc: [...where, ...(issue.loc[0] === 'body' ? issue.loc.slice(1) : issue.loc)],
          msg: `${id}: ${issue.msg}`,
        })),
      );
    }
    if (error instanceof AppError)
      throw new AppError(error.code, `${kind} ${id} (${action}): ${error.message}`, {
        headers: error.headers,
        cause: error,
      });
    throw error;
  }
}

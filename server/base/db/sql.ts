// The one way to run hand-written SQL: `$1`-style parameters, executed inside the EntityManager's
// transaction when it has one. Hand-written statements live in named functions next to the module
// that owns the table (services, delivery, stream); pg-boss reaches our transactions through bossDb().
import { CompiledQuery } from 'kysely';
import type { EntityManager } from '@mikro-orm/postgresql';

interface QueryRunner {
  executeQuery<R>(query: CompiledQuery<R>): Promise<{ rows: R[]; numAffectedRows?: bigint }>;
}

function runnerOf(em: EntityManager): QueryRunner {
  const tx = em.getTransactionContext() as QueryRunner | undefined;
  return tx ?? (em.getConnection().getClient() as unknown as QueryRunner);
}

export async function query<T = Record<string, unknown>>(
  em: EntityManager,
  text: string,
  params: readonly unknown[] = [],
): Promise<T[]> {
  const result = await runnerOf(em).executeQuery(CompiledQuery.raw(text, params as unknown[]));
  return result.rows as T[];
}

export async function queryOne<T = Record<string, unknown>>(
  em: EntityManager,
  text: string,
  params: readonly unknown[] = [],
): Promise<T | undefined> {
  const rows = await query<T>(em, text, params);
  return rows[0];
}

/** Runs a statement and returns the number of rows it changed. */
export async function execute(em: EntityManager, text: string, params: readonly unknown[] = []): Promise<number> {
  const result = await runnerOf(em).executeQuery(CompiledQuery.raw(text, params as unknown[]));
  return Number(result.numAffectedRows ?? 0n);
}

/** A pg-boss database adapter bound to an EntityManager, so jobs are inserted in the same transaction as our rows. */
export function bossDb(em: EntityManager): { executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }> } {
  return {
    async executeSql(text, values = []) {
      return { rows: await query(em, text, values) };
    },
  };
}

/** True for PostgreSQL's unique_violation (23505), however the driver wrapped it. */
export function isUniqueViolation(error: unknown): boolean {
  for (
    let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (e.code === '23505') return true;
  }
  return false;
}

export { toIsoTimestamp } from '../timestamps.ts';

// What readiness asks the database: that it answers, and that the job queue's schema is installed.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from './sql.ts';
import { BOSS_SCHEMA } from '../queue.ts';

const DATABASE_PROBE = 'SELECT 1';
const QUEUE_SCHEMA_PROBE = `SELECT 1 FROM ${BOSS_SCHEMA}.version`;

/** Resolves once the database answers a query; throws what the driver threw otherwise. */
export async function probeDatabase(em: EntityManager): Promise<void> {
  await query(em, DATABASE_PROBE);
}

/** Resolves once pg-boss's schema answers; throws while it is missing. */
export async function probeQueueSchema(em: EntityManager): Promise<void> {
  await query(em, QUEUE_SCHEMA_PROBE);
}

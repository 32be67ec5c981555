// What `herald status` reads from the database: the server's version, the job queue's state, and
// health warnings beyond connectivity (features add theirs here, e.g. secrets whose encryption key is
// gone).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../base/config.ts';
import { loadKeyRing } from '../base/crypto/keyring.ts';
import { query } from '../base/db/sql.ts';
import { BOSS_SCHEMA } from '../base/queue.ts';
import { unreadableSecretWarnings } from './keys.ts';

const SERVER_VERSION = 'SHOW server_version';
const TABLE_EXISTS = `SELECT to_regclass($1) IS NOT NULL AS installed`;
const QUEUE_SCHEMA_VERSION = `SELECT version FROM ${BOSS_SCHEMA}.version`;
const QUEUE_COUNT = `SELECT count(*)::int AS n FROM ${BOSS_SCHEMA}.queue`;

export async function statusChecks(em: EntityManager, config: Config): Promise<string[]> {
  const warnings: string[] = [];
  // Secrets whose encryption key is gone (retired with --force, or dropped from HERALD_ENCRYPTION_KEYS).
  // A key ring that does not load at all is reported by `herald status` itself.
  let keyIds: string[] | null;
  try {
    keyIds = loadKeyRing({ dataDir: config.dataDir, encryptionKeys: config.encryptionKeys }).keyIds();
  } catch {
    keyIds = null;
  }
  if (keyIds) warnings.push(...(await unreadableSecretWarnings(em, keyIds)));
  return warnings;
}

/** The database server's version: a round trip that also proves the database answers. */
export async function databaseServerVersion(em: EntityManager): Promise<string | undefined> {
  const [row] = await query<{ server_version: string }>(em, SERVER_VERSION);
  return row?.server_version;
}

/** Whether the job queue's schema is installed, its version and how many queues it holds. */
export async function queueStatus(
  em: EntityManager,
): Promise<{ installed: boolean; schema_version?: number | null; queues?: number }> {
  const [boss] = await query<{ installed: boolean }>(em, TABLE_EXISTS, [`${BOSS_SCHEMA}.version`]);
  if (!boss?.installed) return { installed: false };
  const [v] = await query<{ version: number }>(em, QUEUE_SCHEMA_VERSION);
  const [q] = await query<{ n: number }>(em, QUEUE_COUNT);
  return { installed: true, schema_version: v?.version ?? null, queues: q?.n ?? 0 };
}

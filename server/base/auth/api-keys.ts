// The api_keys table's writes: a key is stored by its hash, stamped when it is used, and revoked.
// Authentication owns the table because it stamps a key's use in the same round trip as the lookup;
// resources/api-keys.ts issues, lists and revokes keys through these statements.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, queryOne } from '../db/sql.ts';

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  created_at: Date | string;
  last_used_at: Date | string | null;
}

/** The columns of an ApiKeyRow, for the statements that return one. */
export const API_KEY_COLUMNS = 'id, name, prefix, created_at, last_used_at';

const INSERT_KEY = `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash) VALUES ($1, $2, $3, $4, $5) RETURNING ${API_KEY_COLUMNS}`;

const REVOKE_KEY = `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND tenant_id = $2 AND revoked_at IS NULL`;

/** The unrevoked key with this hash, its last use stamped at most once a minute (one round trip). */
const FIND_AND_STAMP_KEY = `WITH k AS (
       SELECT id, tenant_id, last_used_at FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL
     ), touched AS (
       UPDATE api_keys a SET last_used_at = now() FROM k
        WHERE a.id = k.id AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '60 seconds')
     )
     SELECT id, tenant_id FROM k`;

export async function insertApiKey(
  em: EntityManager,
  key: { id: string; tenantId: string; name: string; prefix: string; hash: Buffer },
): Promise<ApiKeyRow> {
  return (await queryOne<ApiKeyRow>(em, INSERT_KEY, [key.id, key.tenantId, key.name, key.prefix, key.hash]))!;
}

/** Revokes a live key of the tenant; false when there is none with that id. */
export async function revokeApiKeyRow(em: EntityManager, tenantId: string, id: string): Promise<boolean> {
  return (await execute(em, REVOKE_KEY, [id, tenantId])) > 0;
}

export async function findServiceKeyByHash(
  em: EntityManager,
  hash: Buffer,
): Promise<{ id: string; tenant_id: string } | undefined> {
  return queryOne<{ id: string; tenant_id: string }>(em, FIND_AND_STAMP_KEY, [hash]);
}

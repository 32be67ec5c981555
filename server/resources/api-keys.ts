// Service keys: "sk_" + 32 random bytes (base64url). Only the SHA-256 of a key is stored (see
// server/api/auth-rules.ts, which authenticates them); the key itself is returned once, at issue.
// Revocation stamps revoked_at: authentication ignores revoked rows at once, and they leave the list
// (a revoked key can do nothing, so listing it would only invite confusion; the row stays for audit).
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { execute, query, queryOne } from '../base/db/sql.ts';
import { SERVICE_KEY_PREFIX, hashServiceKey } from '../base/auth/credentials.ts';
import type { ApiKeyResponse, IssuedApiKeyResponse } from '../schemas/api-keys.ts';
import { toIsoTimestamp } from '../base/timestamps.ts';

/** How many leading characters of a key are kept in clear, to recognise it in lists. */
export const API_KEY_PREFIX_LENGTH = 12;

interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  created_at: Date | string;
  last_used_at: Date | string | null;
}

const COLUMNS = 'id, name, prefix, created_at, last_used_at';

export function generateServiceKey(): string {
  return SERVICE_KEY_PREFIX + randomBytes(32).toString('base64url');
}

function toApiKeyResponse(row: ApiKeyRow): ApiKeyResponse {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    created_at: toIsoTimestamp(row.created_at),
    last_used_at: row.last_used_at ? toIsoTimestamp(row.last_used_at) : null,
  };
}

export async function issueApiKey(em: EntityManager, tenantId: string, name: string): Promise<IssuedApiKeyResponse> {
  const key = generateServiceKey();
  const row = (await queryOne<ApiKeyRow>(
    em,
    `INSERT INTO api_keys (id, tenant_id, name, prefix, key_hash) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [newId(), tenantId, name, key.slice(0, API_KEY_PREFIX_LENGTH), hashServiceKey(key)],
  ))!;
  return { ...toApiKeyResponse(row), key };
}

/** The tenant's live (unrevoked) keys, oldest first. */
export async function listApiKeys(em: EntityManager, tenantId: string): Promise<ApiKeyResponse[]> {
  const rows = await query<ApiKeyRow>(
    em,
    `SELECT ${COLUMNS} FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL ORDER BY created_at, id`,
    [tenantId],
  );
  return rows.map(toApiKeyResponse);
}

/** Revokes a live key of the tenant; 404 for an unknown, already revoked or other tenant's key. */
export async function revokeApiKey(em: EntityManager, tenantId: string, apiKeyId: string): Promise<void> {
  const changed = await execute(
    em,
    `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND tenant_id = $2 AND revoked_at IS NULL`,
    [apiKeyId, tenantId],
  );
  if (changed === 0) throw notFound('API key');
}

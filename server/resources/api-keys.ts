// Service keys: "sk_" + 32 random bytes (base64url). Only the SHA-256 of a key is stored (see
// server/api/auth-rules.ts, which authenticates them); the key itself is returned once, at issue.
// Revocation stamps revoked_at: authentication ignores revoked rows at once, and they leave the list
// (a revoked key can do nothing, so listing it would only invite confusion; the row stays for audit).
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { query } from '../base/db/sql.ts';
import { API_KEY_COLUMNS, insertApiKey, revokeApiKeyRow, type ApiKeyRow } from '../base/auth/api-keys.ts';
import { SERVICE_KEY_PREFIX, hashServiceKey } from '../base/auth/credentials.ts';
import type { ApiKeyResponse, IssuedApiKeyResponse } from '../schemas/api-keys.ts';
import { toIsoTimestamp } from '../base/timestamps.ts';

/** How many leading characters of a key are kept in clear, to recognise it in lists. */
export const API_KEY_PREFIX_LENGTH = 12;

const LIST_LIVE_KEYS = `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL
  ORDER BY created_at, id`;

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
  const row = await insertApiKey(em, {
    id: newId(),
    tenantId,
    name,
    prefix: key.slice(0, API_KEY_PREFIX_LENGTH),
    hash: hashServiceKey(key),
  });
  return { ...toApiKeyResponse(row), key };
}

/** The tenant's live (unrevoked) keys, oldest first. */
export async function listApiKeys(em: EntityManager, tenantId: string): Promise<ApiKeyResponse[]> {
  const rows = await query<ApiKeyRow>(em, LIST_LIVE_KEYS, [tenantId]);
  return rows.map(toApiKeyResponse);
}

/** Revokes a live key of the tenant; 404 for an unknown, already revoked or other tenant's key. */
export async function revokeApiKey(em: EntityManager, tenantId: string, apiKeyId: string): Promise<void> {
  if (!(await revokeApiKeyRow(em, tenantId, apiKeyId))) throw notFound('API key');
}

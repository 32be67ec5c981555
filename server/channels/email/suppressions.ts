// The tenant's email suppression list: the email channel never sends to an address on it (the check
// is in server/channels/email/links.ts). Addresses land on it by hand, or from bounces and complaints
// (services/email-feedback.ts); removing one lets mail flow again.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, query, queryOne, toIsoTimestamp } from '../../base/db/sql.ts';
import { invalidField, notFound } from '../../base/errors.ts';
import type { SuppressionListQuery, SuppressionReason, SuppressionResponse } from '../../schemas/suppressions.ts';

interface SuppressionRow {
  email: string;
  reason: SuppressionReason;
  created_at: Date | string;
}

/** A page of the list: $2 one address or null, $3 the cursor (the last address of the previous page) or null. */
const LIST_SUPPRESSIONS = `SELECT email, reason, created_at FROM email_suppressions
      WHERE tenant_id = $1 AND ($2::text IS NULL OR email = $2) AND ($3::text IS NULL OR email > $3)
      ORDER BY email LIMIT $4`;
const SUPPRESS_ADDRESS = `INSERT INTO email_suppressions (tenant_id, email, reason) VALUES ($1, $2, $3)
     ON CONFLICT (tenant_id, email) DO NOTHING RETURNING email, reason, created_at`;
const GET_SUPPRESSION = `SELECT email, reason, created_at FROM email_suppressions WHERE tenant_id = $1 AND email = $2`;
const REMOVE_SUPPRESSION = `DELETE FROM email_suppressions WHERE tenant_id = $1 AND email = $2`;

function toSuppressionResponse(row: SuppressionRow): SuppressionResponse {
  return { email: row.email, reason: row.reason, created_at: toIsoTimestamp(row.created_at) };
}

export async function listSuppressions(
  em: EntityManager,
  tenantId: string,
  filter: SuppressionListQuery,
): Promise<{ items: SuppressionResponse[]; next_cursor: string | null }> {
  let after: string | null = null;
  if (filter.cursor !== undefined) {
    after = Buffer.from(filter.cursor, 'base64url').toString('utf8');
    if (!after.includes('@') || Buffer.from(after, 'utf8').toString('base64url') !== filter.cursor)
      throw invalidField(['query', 'cursor'], 'must be a cursor from next_cursor');
  }
  const rows = await query<SuppressionRow>(em, LIST_SUPPRESSIONS, [
    tenantId,
    filter.email ?? null,
    after,
    filter.limit + 1,
  ]);
  const page = rows.slice(0, filter.limit);
  return {
    items: page.map(toSuppressionResponse),
    next_cursor:
      rows.length > filter.limit ? Buffer.from(page[page.length - 1]!.email, 'utf8').toString('base64url') : null,
  };
}

/** Adds an address (kept with its first reason when already there); answers the entry and whether it is new. */
export async function suppressAddress(
  em: EntityManager,
  tenantId: string,
  email: string,
  reason: SuppressionReason,
): Promise<{ entry: SuppressionResponse; created: boolean }> {
  const inserted = await queryOne<SuppressionRow>(em, SUPPRESS_ADDRESS, [tenantId, email.toLowerCase(), reason]);
  if (inserted) return { entry: toSuppressionResponse(inserted), created: true };
  const existing = await queryOne<SuppressionRow>(em, GET_SUPPRESSION, [tenantId, email.toLowerCase()]);
  return { entry: toSuppressionResponse(existing!), created: false };
}

export async function removeSuppression(em: EntityManager, tenantId: string, email: string): Promise<void> {
  const removed = await execute(em, REMOVE_SUPPRESSION, [tenantId, email.toLowerCase()]);
  if (removed === 0) throw notFound('Suppression');
}

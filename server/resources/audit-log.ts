// The audit log: one row per management write, written inside the write's own transaction (the HTTP
// wrapper runs an audited route's handler and this insert in one transaction; the CLI's local admin
// commands call recordAudit with their own). Secret-looking fields of the recorded changes are masked.
import { hostname, userInfo } from 'node:os';
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../base/ids.ts';
import { query, toIsoTimestamp } from '../base/db/sql.ts';
import type { AuditEntryResponse, AuditListQuery, AuditPage } from '../schemas/audit.ts';
import { decodeCursor, encodeCursor } from '../base/cursor.ts';

export type AuditActor =
  { kind: 'user'; id: string } | { kind: 'service_key'; id: string } | { kind: 'cli'; id: string };

export interface AuditEntry {
  tenantId: string | null;
  actor: AuditActor;
  action: string;
  target: { kind: string; id: string | null };
  ip?: string | null;
  requestId?: string | null;
  changes?: unknown;
}

export const MASK = '********';
const SECRET_FIELD =
  /pass(word)?|secret|token|private_?key|api_?key|authorization|credential|service_account|^key_?material$/i;

// A user's email is copied in, so the entry still names them after the account is gone.
const INSERT_AUDIT_ENTRY = `INSERT INTO audit_log
     (id, tenant_id, actor_kind, actor_id, actor_email, action, target_kind, target_id, ip, request_id, changes)
     VALUES ($1, $2, $3, $4, CASE WHEN $3 = 'user' THEN (SELECT email FROM users WHERE id::text = $4) END,
             $5, $6, $7, $8, $9, $10::jsonb)`;

// A service key is named by its row (kept after revocation), of the entry's own tenant.
const LIST_AUDIT_ENTRIES = `SELECT a.id, a.at, a.tenant_id, a.actor_kind, a.actor_id, a.actor_email, k.name AS actor_name,
             a.action, a.target_kind, a.target_id, a.ip, a.request_id, a.changes
       FROM audit_log a
       LEFT JOIN api_keys k ON k.id = CASE WHEN a.actor_kind = 'service_key' THEN a.actor_id::uuid END AND k.tenant_id = a.tenant_id
      WHERE ($1::boolean OR a.tenant_id = $2::uuid)
        AND ($3::text IS NULL OR a.actor_id = $3 OR lower(a.actor_email) = lower($3))
        AND (($4::text IS NULL AND $5::text IS NULL) OR a.action = $4 OR starts_with(a.action, $5))
        AND ($6::timestamptz IS NULL OR a.at >= $6)
        AND ($7::uuid IS NULL OR a.id < $7::uuid)
      ORDER BY a.id DESC
      LIMIT $8`;

/** A copy of `value` with every secret-looking field's value replaced by the mask (at any depth). */
export function maskSecrets(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    out[k] = SECRET_FIELD.test(k) && v !== null && v !== undefined ? MASK : maskSecrets(v, depth + 1);
  return out;
}

export async function recordAudit(em: EntityManager, entry: AuditEntry): Promise<void> {
  const changes =
    entry.changes === undefined || entry.changes === null ? null : JSON.stringify(maskSecrets(entry.changes));
  await query(em, INSERT_AUDIT_ENTRY, [
    newId(),
    entry.tenantId,
    entry.actor.kind,
    entry.actor.id,
    entry.action,
    entry.target.kind,
    entry.target.id,
    entry.ip ?? null,
    entry.requestId ?? null,
    changes,
  ]);
}

/** The CLI's actor: the operating-system account on the host. */
export function cliActor(): AuditActor {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry for this uid (containers): the host name alone still says where it came from.
  }
  return { kind: 'cli', id: `${user}@${hostname()}` };
}

interface AuditRow {
  id: string;
  at: Date | string;
  actor_kind: 'user' | 'service_key' | 'cli';
  actor_id: string | null;
  actor_email: string | null;
  actor_name: string | null;
  action: string;
  target_kind: string;
  target_id: string | null;
  ip: string | null;
  request_id: string | null;
  changes: unknown;
  tenant_id: string | null;
}

function toAuditEntryResponse(row: AuditRow): AuditEntryResponse {
  return {
    id: row.id,
    at: toIsoTimestamp(row.at),
    tenant_id: row.tenant_id,
    actor: { kind: row.actor_kind, id: row.actor_id, email: row.actor_email, name: row.actor_name },
    action: row.action,
    target: { kind: row.target_kind, id: row.target_id },
    ip: row.ip,
    request_id: row.request_id,
    changes: (row.changes ?? null) as AuditEntryResponse['changes'],
  };
}

/**
 * Newest first. `actor` matches an actor's id or email; `action` is exact, or a prefix when it ends
 * in `*` (`brand.*`); `tenantId` null lists every tenant's and the install's entries (the CLI on the host).
 */
export async function listAudit(
  em: EntityManager,
  tenantId: string | null,
  filter: AuditListQuery,
  all = false,
): Promise<AuditPage> {
  const after = filter.cursor ? decodeCursor(filter.cursor) : null;
  const action = filter.action ?? null;
  const prefix = action?.endsWith('*') ? action.slice(0, -1) : null;
  const rows = await query<AuditRow>(em, LIST_AUDIT_ENTRIES, [
    all,
    tenantId,
    filter.actor ?? null,
    prefix === null ? action : null,
    prefix,
    filter.since ?? null,
    after,
    filter.limit + 1,
  ]);
  const page = rows.slice(0, filter.limit);
  return {
    items: page.map(toAuditEntryResponse),
    next_cursor: rows.length > filter.limit ? encodeCursor(page[page.length - 1]!.id) : null,
  };
}

// Data requests: an owner asks for an export or a deletion of a tenant's data; a job does the work.
// - export: every table with a tenant_id column (discovered from the catalog, so later tables are
//   included) plus the tenant row and its members, as one JSON file in <dataDir>/exports/ (mode 0600),
//   without secrets: encrypted columns (server/base/crypto/encrypted-columns.ts) and every *_hash column
//   are left out.
// - delete: removes the tenant row; every tenant table cascades from it, and earlier export files of
//   the tenant are removed. The data_requests row has no foreign key to tenants, so it survives as the
//   record that the deletion completed (readable by a local admin; the tenant's routes answer 404).
import { mkdirSync, rmSync, writeFileSync, chmodSync, existsSync, createReadStream, statSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { bossDb, execute, query, queryOne } from '../base/db/sql.ts';
import type { Context } from '../base/context.ts';
import { encryptedColumns } from '../base/crypto/encrypted-columns.ts';
import { requireMembership } from './tenants.ts';
import { reassignDefault } from './members.ts';
import { toIsoTimestamp, toIsoTimestampOrNull } from '../base/timestamps.ts';

export const DATA_REQUEST_JOB = 'data-request';

export type DataRequestKind = 'export' | 'delete';
type DataRequestStatus = 'queued' | 'running' | 'completed' | 'failed';

interface DataRequestRow {
  id: string;
  tenant_id: string;
  kind: DataRequestKind;
  status: DataRequestStatus;
  file_path: string | null;
  created_at: Date;
  completed_at: Date | null;
  error: string | null;
}

export interface DataRequestResponseBody {
  id: string;
  kind: DataRequestKind;
  status: DataRequestStatus;
  created_at: string;
  completed_at: string | null;
  download_url: string | null;
  error: string | null;
}

const COLUMNS = 'id, tenant_id, kind, status, file_path, created_at, completed_at, error';

const INSERT_DATA_REQUEST = `INSERT INTO data_requests (id, tenant_id, kind, requested_by, created_at)
  VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`;

const FIND_DATA_REQUEST = `SELECT ${COLUMNS} FROM data_requests WHERE id = $1 AND tenant_id = $2`;

const START_DATA_REQUEST = `UPDATE data_requests SET status = 'running'
  WHERE id = $1 AND status IN ('queued', 'running') RETURNING ${COLUMNS}`;

const COMPLETE_DATA_REQUEST = `UPDATE data_requests
  SET status = 'completed', file_path = $2, completed_at = $3, error = NULL WHERE id = $1`;

const FAIL_DATA_REQUEST = `UPDATE data_requests SET status = 'failed', error = $2, completed_at = $3 WHERE id = $1`;

const LIST_TENANT_TABLE_COLUMNS = `SELECT c.table_name, c.column_name FROM information_schema.columns c
      JOIN information_schema.tables t
        ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
     WHERE c.table_schema = current_schema()
       AND c.table_name IN (SELECT table_name FROM information_schema.columns
                             WHERE table_schema = current_schema() AND column_name = 'tenant_id')
     ORDER BY c.table_name, c.ordinal_position`;

const LIST_EVENTS_WITH_SECRETS = `SELECT id::text FROM events WHERE tenant_id = $1 AND cardinality(secret_keys) > 0`;

// The tenants table holds no secrets; SELECT * keeps columns added by later migrations.
const FIND_TENANT_ROW = `SELECT * FROM tenants WHERE id = $1`;

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** A tenant table's exportable columns, of the tenant in $1. */
function exportTableSql(table: string, columns: string[]): string {
  return `SELECT ${columns.map(quoteIdent).join(', ')} FROM ${quoteIdent(table)} WHERE tenant_id = $1`;
}

const LIST_EXPORT_MEMBERS = `SELECT u.id AS user_id, u.email, m.role, m.created_at FROM memberships m
  JOIN users u ON u.id = m.user_id WHERE m.tenant_id = $1 ORDER BY m.created_at`;

const LIST_EXPORT_FILES = `SELECT file_path FROM data_requests WHERE tenant_id = $1 AND file_path IS NOT NULL`;

const LIST_DEFAULT_MEMBERSHIPS = `SELECT user_id FROM memberships WHERE tenant_id = $1 AND is_default`;

const DELETE_TENANT = `DELETE FROM tenants WHERE id = $1`;

const FORGET_EXPORT_FILES = `UPDATE data_requests SET file_path = NULL WHERE tenant_id = $1`;

function toDataRequestResponse(row: DataRequestRow): DataRequestResponseBody {
  const downloadable = row.kind === 'export' && row.status === 'completed' && row.file_path !== null;
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    created_at: toIsoTimestamp(row.created_at),
    completed_at: toIsoTimestampOrNull(row.completed_at),
    download_url: downloadable ? `/v1/auth/tenants/${row.tenant_id}/data-requests/${row.id}/download` : null,
    error: row.error,
  };
}

/** Files a request and its job in one transaction; 503 when the queue cannot take it. */
export async function fileDataRequest(
  runtime: Context,
  em: EntityManager,
  callerId: string,
  tenantId: string,
  kind: DataRequestKind,
): Promise<DataRequestResponseBody> {
  await requireMembership(em, callerId, tenantId, 'owner');
  const boss = runtime.boss;
  if (!boss)
    throw new AppError('data_request_unavailable', 'The request could not be filed right now; please contact support');
  try {
    return await em.transactional(async (tx) => {
      const row = (await queryOne<DataRequestRow>(tx, INSERT_DATA_REQUEST, [
        newId(),
        tenantId,
        kind,
        callerId,
        new Date(runtime.clock.now()),
      ]))!;
      const jobId = await boss.send(DATA_REQUEST_JOB, { data_request_id: row.id }, { db: bossDb(tx) });
      if (!jobId) throw new Error('the queue refused the job');
      return toDataRequestResponse(row);
    });
  } catch (error) {
    if (error instanceof AppError) throw error;
    runtime.logger.error('data request could not be filed', { tenant_id: tenantId, kind, error });
    throw new AppError('data_request_unavailable', 'The request could not be filed right now; please contact support', {
      cause: error,
    });
  }
}

async function requestOf(em: EntityManager, tenantId: string, id: string): Promise<DataRequestRow> {
  const row = await queryOne<DataRequestRow>(em, FIND_DATA_REQUEST, [id, tenantId]);
  if (!row) throw new AppError('not_found', 'Data request not found');
  return row;
}

export async function getDataRequest(
  em: EntityManager,
  callerId: string,
  tenantId: string,
  id: string,
): Promise<DataRequestResponseBody> {
  await requireMembership(em, callerId, tenantId, 'owner');
  return toDataRequestResponse(await requestOf(em, tenantId, id));
}

/** The export file as a stream; 404 until the export has completed (or once its file is gone). */
export async function openExport(
  em: EntityManager,
  callerId: string,
  tenantId: string,
  id: string,
): Promise<{ stream: ReadableStream; size: number; filename: string }> {
  await requireMembership(em, callerId, tenantId, 'owner');
  const row = await requestOf(em, tenantId, id);
  if (row.kind !== 'export' || row.status !== 'completed' || !row.file_path || !existsSync(row.file_path)) {
    throw new AppError('not_found', 'No export file for this request');
  }
  return {
    stream: Readable.toWeb(createReadStream(row.file_path)) as ReadableStream,
    size: statSync(row.file_path).size,
    filename: `herald-export-${tenantId}-${row.id}.json`,
  };
}

// ---- the job ----

export function exportsDir(runtime: Context): string {
  return join(runtime.config.dataDir, 'exports');
}

/** Runs one data request: marks it running, does the work, records completion or the failure. */
export async function runDataRequest(runtime: Context, id: string): Promise<void> {
  const em = runtime.orm.em.fork();
  const row = await queryOne<DataRequestRow>(em, START_DATA_REQUEST, [id]);
  if (!row) return; // already finished (a retried job after completion)
  try {
    let filePath: string | null = null;
    if (row.kind === 'export') filePath = await writeExport(runtime, em, row);
    else await deleteTenantData(runtime, em, row.tenant_id);
    await execute(em, COMPLETE_DATA_REQUEST, [id, filePath, new Date(runtime.clock.now())]);
    runtime.logger.info('data request completed', { data_request_id: id, kind: row.kind, tenant_id: row.tenant_id });
  } catch (error) {
    await execute(em, FAIL_DATA_REQUEST, [
      id,
      'The request failed; please contact support',
      new Date(runtime.clock.now()),
    ]);
    runtime.logger.error('data request failed', { data_request_id: id, kind: row.kind, error });
  }
}

// Never exported: every hash column (credential hashes, the idempotency request hash, which covers
// secret variables, push destination hashes), browser push keys, and server-side paths.
const HASH_COLUMN = /_hash$/;
const NOT_EXPORTED = new Set(['push_subscriptions.keys', 'data_requests.file_path']);

/** Tables with a tenant_id column and the columns of each that may leave the install. */
async function exportableTables(em: EntityManager): Promise<Map<string, string[]>> {
  const rows = await query<{ table_name: string; column_name: string }>(em, LIST_TENANT_TABLE_COLUMNS);
  const secret = new Set(encryptedColumns.map((c) => `${c.table}.${c.column}`));
  const tables = new Map<string, string[]>();
  for (const r of rows) {
    const column = `${r.table_name}.${r.column_name}`;
    if (secret.has(column) || NOT_EXPORTED.has(column) || HASH_COLUMN.test(r.column_name)) continue;
    tables.set(r.table_name, [...(tables.get(r.table_name) ?? []), r.column_name]);
  }
  return tables;
}

const MASK = '********';

/**
 * Delivered content rendered from an event's secret variables (inbox items, and the stream log's
 * copies of them) holds those values in clear for the recipient. Secrets never leave in an export,
 * so such content is masked there; the events themselves keep only the secrets' names.
 */
async function maskSecretContent(
  em: EntityManager,
  tenantId: string,
  tables: Record<string, Array<Record<string, unknown>>>,
): Promise<void> {
  const rows = await query<{ id: string }>(em, LIST_EVENTS_WITH_SECRETS, [tenantId]);
  const withSecrets = new Set(rows.map((r) => r.id));
  if (withSecrets.size === 0) return;
  const maskItem = (item: Record<string, unknown>) => ({
    ...item,
    title: MASK,
    body: MASK,
    action_url: item.action_url == null ? null : MASK,
  });
  tables.inbox_items = (tables.inbox_items ?? []).map((item) =>
    withSecrets.has(String(item.event_id)) ? maskItem(item) : item,
  );
  tables.stream_events = (tables.stream_events ?? []).map((event) => {
    const payload = event.payload as Record<string, unknown> | null;
    return payload && withSecrets.has(String(payload.event_id)) ? { ...event, payload: maskItem(payload) } : event;
  });
}

async function writeExport(runtime: Context, em: EntityManager, request: DataRequestRow): Promise<string> {
  const tenantId = request.tenant_id;
  const tenant = await queryOne(em, FIND_TENANT_ROW, [tenantId]);
  if (!tenant) throw new Error('tenant no longer exists');
  const tables: Record<string, Array<Record<string, unknown>>> = {};
  for (const [table, columns] of await exportableTables(em)) {
    tables[table] = await query(em, exportTableSql(table, columns), [tenantId]);
  }
  await maskSecretContent(em, tenantId, tables);
  const members = await query(em, LIST_EXPORT_MEMBERS, [tenantId]);
  const document = {
    format: 'herald-tenant-export',
    version: 1,
    exported_at: toIsoTimestamp(runtime.clock.now()),
    tenant,
    members,
    tables,
  };
  const dir = exportsDir(runtime);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${tenantId}-${request.id}.json`);
  writeFileSync(
    file,
    JSON.stringify(document, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2),
    { mode: 0o600 },
  );
  chmodSync(file, 0o600);
  return file;
}

async function deleteTenantData(runtime: Context, em: EntityManager, tenantId: string): Promise<void> {
  const exports = await query<{ file_path: string }>(em, LIST_EXPORT_FILES, [tenantId]);
  await em.transactional(async (tx) => {
    // Users whose default tenant this was get another default, as when a member is removed.
    const affected = await query<{ user_id: string }>(tx, LIST_DEFAULT_MEMBERSHIPS, [tenantId]);
    await execute(tx, DELETE_TENANT, [tenantId]);
    for (const { user_id } of affected) await reassignDefault(tx, user_id);
    await execute(tx, FORGET_EXPORT_FILES, [tenantId]);
  });
  for (const { file_path } of exports) rmSync(file_path, { force: true });
}

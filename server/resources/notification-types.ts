// Notification types. Soft delete: DELETE stamps deleted_at (the row, its templates and contacts'
// preferences stay), so a deleted type can be restored. Only one live type per key exists (a partial
// unique index); a key can be reused after deletion, which may leave several deleted rows for a key.
//
// Which row a key names: the live one; for GET and restore, when no type is live, the most recently
// deleted one. Editing routes (channel defaults, opt-out policy, variables) act on the live type only:
// a deleted type answers 404 until it is restored.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { isUniqueViolation, query, queryOne } from '../base/db/sql.ts';
import {
  DEFAULT_CHANNEL_DEFAULTS,
  type ChannelDefaults,
  type CreateNotificationTypeRequest,
  type NotificationTypeResponse,
  type NotificationTypeVariable,
} from '../schemas/notification-types.ts';
import { toIsoTimestamp } from '../base/timestamps.ts';
import type { Workflow } from '../schemas/workflows.ts';

export interface NotificationTypeRow {
  id: string;
  key: string;
  name: string;
  description: string;
  channel_defaults: ChannelDefaults;
  opt_out: boolean;
  variables: NotificationTypeVariable[];
  workflow: Workflow | null;
  bypass_quiet_hours: boolean;
  deleted_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

const COLUMNS =
  'id, key, name, description, channel_defaults, opt_out, variables, workflow, bypass_quiet_hours, deleted_at, created_at, updated_at';

const FIND_LIVE_TYPE = `SELECT ${COLUMNS} FROM notification_types
  WHERE tenant_id = $1 AND key = $2 AND deleted_at IS NULL`;
const FIND_TYPE = `SELECT ${COLUMNS} FROM notification_types WHERE tenant_id = $1 AND key = $2
      ORDER BY deleted_at DESC NULLS FIRST, id DESC LIMIT 1`;
const INSERT_TYPE = `INSERT INTO notification_types
       (id, tenant_id, key, name, description, channel_defaults, opt_out, variables, workflow, bypass_quiet_hours)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (tenant_id, key) WHERE deleted_at IS NULL DO NOTHING
     RETURNING ${COLUMNS}`;
const SOFT_DELETE_TYPE = `UPDATE notification_types SET deleted_at = now(), updated_at = now()
  WHERE tenant_id = $1 AND key = $2 AND deleted_at IS NULL RETURNING id`;
const LOCK_TYPES_OF_KEY = `SELECT ${COLUMNS} FROM notification_types WHERE tenant_id = $1 AND key = $2
        ORDER BY deleted_at DESC NULLS FIRST, id DESC FOR UPDATE`;
const RESTORE_TYPE = `UPDATE notification_types SET deleted_at = NULL, updated_at = now()
  WHERE id = $1 RETURNING ${COLUMNS}`;

function listNotificationTypesSql(includeDeleted: boolean): string {
  return `SELECT ${COLUMNS} FROM notification_types
      WHERE tenant_id = $1 ${includeDeleted ? '' : 'AND deleted_at IS NULL'}
      ORDER BY key, deleted_at DESC NULLS FIRST, id DESC`;
}

/** `set`: SQL assignments using $3... */
function updateLiveTypeSql(set: string): string {
  return `UPDATE notification_types SET ${set}, updated_at = now()
    WHERE tenant_id = $1 AND key = $2 AND deleted_at IS NULL RETURNING ${COLUMNS}`;
}

export function toNotificationTypeResponse(row: NotificationTypeRow): NotificationTypeResponse {
  return {
    key: row.key,
    name: row.name,
    description: row.description,
    channel_defaults: { ...DEFAULT_CHANNEL_DEFAULTS, ...row.channel_defaults },
    opt_out: row.opt_out,
    variables: row.variables,
    workflow: row.workflow,
    bypass_quiet_hours: row.bypass_quiet_hours,
    deleted: row.deleted_at !== null,
    created_at: toIsoTimestamp(row.created_at),
    updated_at: toIsoTimestamp(row.updated_at),
  };
}

/** The live type with this key, if any (what triggers and template writes may use). */
export async function findLiveType(
  em: EntityManager,
  tenantId: string,
  key: string,
): Promise<NotificationTypeRow | undefined> {
  return queryOne<NotificationTypeRow>(em, FIND_LIVE_TYPE, [tenantId, key]);
}

/** The live type with this key, else the most recently deleted one. */
export async function findType(
  em: EntityManager,
  tenantId: string,
  key: string,
): Promise<NotificationTypeRow | undefined> {
  return queryOne<NotificationTypeRow>(em, FIND_TYPE, [tenantId, key]);
}

export async function createNotificationType(
  em: EntityManager,
  tenantId: string,
  input: CreateNotificationTypeRequest,
): Promise<NotificationTypeRow> {
  // ON CONFLICT against the partial unique index: a concurrent duplicate is a 409, never a 500.
  const row = await queryOne<NotificationTypeRow>(em, INSERT_TYPE, [
    newId(),
    tenantId,
    input.key,
    input.name || input.key,
    input.description,
    JSON.stringify({ ...DEFAULT_CHANNEL_DEFAULTS, ...input.channel_defaults }),
    input.opt_out,
    JSON.stringify(input.variables),
    input.workflow ? JSON.stringify(input.workflow) : null,
    input.bypass_quiet_hours,
  ]);
  if (!row) throw new AppError('already_exists', `A notification type with key ${input.key} already exists`);
  return row;
}

export async function listNotificationTypes(
  em: EntityManager,
  tenantId: string,
  includeDeleted: boolean,
): Promise<NotificationTypeRow[]> {
  return query<NotificationTypeRow>(em, listNotificationTypesSql(includeDeleted), [tenantId]);
}

export async function getNotificationType(
  em: EntityManager,
  tenantId: string,
  key: string,
): Promise<NotificationTypeRow> {
  const row = await findType(em, tenantId, key);
  if (!row) throw notFound('Notification type');
  return row;
}

export async function deleteNotificationType(em: EntityManager, tenantId: string, key: string): Promise<void> {
  const row = await queryOne(em, SOFT_DELETE_TYPE, [tenantId, key]);
  if (!row) throw notFound('Notification type');
}

/** Applies `set` (SQL assignments using $3...) to the live type; 404 when there is none. */
async function updateLive(
  em: EntityManager,
  tenantId: string,
  key: string,
  set: string,
  params: unknown[],
): Promise<NotificationTypeRow> {
  const row = await queryOne<NotificationTypeRow>(em, updateLiveTypeSql(set), [tenantId, key, ...params]);
  if (!row) throw notFound('Notification type');
  return row;
}

export function updateChannelDefaults(
  em: EntityManager,
  tenantId: string,
  key: string,
  patch: Partial<ChannelDefaults>,
): Promise<NotificationTypeRow> {
  return updateLive(em, tenantId, key, `channel_defaults = channel_defaults || $3::jsonb`, [JSON.stringify(patch)]);
}

/** Turning the policy off keeps contacts' opt-outs (dormant); turning it on makes them count again. */
export function setOptOutPolicy(
  em: EntityManager,
  tenantId: string,
  key: string,
  optOut: boolean,
): Promise<NotificationTypeRow> {
  return updateLive(em, tenantId, key, `opt_out = $3`, [optOut]);
}

/** Name and description (configuration as code sets them; the API has no route for them yet). */
export function setTypeDetails(
  em: EntityManager,
  tenantId: string,
  key: string,
  details: { name: string; description: string },
): Promise<NotificationTypeRow> {
  return updateLive(em, tenantId, key, `name = $3, description = $4`, [details.name, details.description]);
}

export function setVariables(
  em: EntityManager,
  tenantId: string,
  key: string,
  variables: NotificationTypeVariable[],
): Promise<NotificationTypeRow> {
  return updateLive(em, tenantId, key, `variables = $3::jsonb`, [JSON.stringify(variables)]);
}

/**
 * Sets the type's workflow (null: back to the default, every enabled channel at once). Events already
 * started keep the workflow they started with; events not started yet take the new one.
 */
export function setWorkflow(
  em: EntityManager,
  tenantId: string,
  key: string,
  workflow: Workflow | null,
): Promise<NotificationTypeRow> {
  return updateLive(em, tenantId, key, `workflow = $3::jsonb`, [workflow === null ? null : JSON.stringify(workflow)]);
}

/** Whether the type's remote channels ignore contacts' quiet hours (one-time codes, security alerts). */
export function setQuietHoursBypass(
  em: EntityManager,
  tenantId: string,
  key: string,
  bypass: boolean,
): Promise<NotificationTypeRow> {
  return updateLive(em, tenantId, key, `bypass_quiet_hours = $3`, [bypass]);
}

/**
 * Restores the most recently deleted type with this key. When the key is live already: a no-op 200
 * if there is nothing deleted to restore (a retried restore), else 409 (another live type took the
 * key after the deletion; delete it first to bring the old one back).
 */
export async function restoreNotificationType(
  em: EntityManager,
  tenantId: string,
  key: string,
): Promise<NotificationTypeRow> {
  return em.transactional(async (tx) => {
    const rows = await query<NotificationTypeRow>(tx, LOCK_TYPES_OF_KEY, [tenantId, key]);
    const live = rows.find((r) => r.deleted_at === null);
    const deleted = rows.find((r) => r.deleted_at !== null);
    if (!live && !deleted) throw notFound('Notification type');
    if (live && !deleted) return live;
    if (live)
      throw new AppError(
        'already_exists',
        `A live notification type with key ${key} exists; delete it before restoring the deleted one`,
      );
    try {
      return (await queryOne<NotificationTypeRow>(tx, RESTORE_TYPE, [deleted!.id]))!;
    } catch (error) {
      // A type created with this key between our read and this update (the live-key index refuses).
      if (isUniqueViolation(error))
        throw new AppError('already_exists', `A live notification type with key ${key} exists`);
      throw error;
    }
  });
}

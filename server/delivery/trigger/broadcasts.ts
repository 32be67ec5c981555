// Broadcasts: one notification type sent to a topic or to every contact of a tenant. Accepting one
// writes the broadcast row and its fan-out job in one transaction and answers 202 at once (with
// Idempotency-Key semantics, as a trigger); the fan-out (broadcast-fan-out.ts) then writes one event
// per contact, which the delivery workers deliver as any trigger's. A broadcast is completed once its
// fan-out is done and every event is final; cancelling stops the fan-out and cancels every event not
// final yet.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, ValidationFailure, notFound, type ValidationIssue } from '../../base/errors.ts';
import { isUuid, newId } from '../../base/ids.ts';
import { bossDb, execute, query, queryOne, toIsoTimestamp } from '../../base/db/sql.ts';
import { BOSS_SCHEMA, statementPerQueue } from '../../base/queue.ts';
import type { Context } from '../../base/context.ts';
import { DELIVER_EVENT_QUEUE } from '../queues.ts';
import { cancelByBroadcast } from '../cancel.ts';
import { unauthorized } from '../../base/auth/credentials.ts';
import { broadcastSecretAad } from '../../base/crypto/aad.ts';
import type {
  BroadcastAccepted,
  BroadcastAudience,
  BroadcastCounts,
  BroadcastListQuery,
  BroadcastPage,
  BroadcastRequest,
  BroadcastResponse,
} from '../../schemas/broadcasts.ts';
import { completeIdempotencyKey, withIdempotencyKey, type IdempotencyClaim } from './idempotency.ts';
import { checkVariableNames } from './notifications.ts';
import { decodeCursor, encodeCursor } from '../../base/cursor.ts';
import { missingVariablesSql } from './batch.ts';
import { emitWebhookEvent } from '../../webhooks/emit.ts';

export const BROADCAST_FAN_OUT_QUEUE = 'broadcast-fan-out';
/** A fan-out job out of retries lands here; its worker ends the broadcast 'failed'. */
export const BROADCAST_FAN_OUT_DEAD_QUEUE = 'broadcast-fan-out-dead';
export const BROADCAST_COMPLETION_QUEUE = 'broadcast-completion';

export interface BroadcastRow {
  id: string;
  tenant_id: string;
  type_key: string;
  audience: BroadcastAudience;
  topic_id: string | null;
  brand_key: string | null;
  channels: string[] | null;
  variables: Record<string, unknown>;
  secret_variables_ciphertext: string | null;
  secret_keys: string[];
  status: BroadcastResponse['status'];
  send_at: Date | string | null;
  fan_out_cursor: string | null;
  fanned_out_at: Date | string | null;
  targeted: number;
  events_created: number;
  created_at: Date | string;
  completed_at: Date | string | null;
  failure_reason: string | null;
}

export const BROADCAST_COLUMNS = `id, tenant_id, type_key, audience, topic_id, brand_key, channels, variables, secret_variables_ciphertext, secret_keys,
  status, send_at, fan_out_cursor, fanned_out_at, targeted, events_created, created_at, completed_at, failure_reason`;

/** The counts of a broadcast's events by status, as an SQL expression over `broadcasts b` (its final counts once completed). */
const COUNTS_SQL = `coalesce(b.final_counts, (
  SELECT json_build_object(
           'delivered', count(*) FILTER (WHERE e.status IN ('delivered', 'partially_delivered')),
           'failed', count(*) FILTER (WHERE e.status = 'failed'),
           'skipped', count(*) FILTER (WHERE e.status = 'skipped'),
           'canceled', count(*) FILTER (WHERE e.status = 'canceled'),
           'pending', count(*) FILTER (WHERE e.status IN ('queued', 'processing')))::jsonb
    FROM events e WHERE e.broadcast_id = b.id))`;

type CountedRow = BroadcastRow & { counts: BroadcastCounts };

/** The trigger's checks (tenant, live type, brand, required variables) and the audience's topic, in one round trip. */
const CHECK = `
  SELECT tn.id IS NOT NULL AS tenant_found, tn.archived_at IS NOT NULL AS archived, nt.key IS NOT NULL AS type_found,
         ($3::text IS NULL OR EXISTS (SELECT 1 FROM brands b WHERE b.tenant_id = i.tenant_id AND b.key = $3)) AS brand_found,
         ${missingVariablesSql('nt', '$4::text[]')} AS missing,
         (SELECT t.id FROM topics t WHERE t.tenant_id = i.tenant_id AND t.key = $5) AS topic_id
    FROM (SELECT $1::uuid AS tenant_id) AS i
    LEFT JOIN tenants tn ON tn.id = i.tenant_id
    LEFT JOIN notification_types nt ON nt.tenant_id = i.tenant_id AND nt.key = $2 AND nt.deleted_at IS NULL`;

const INSERT_BROADCAST = `INSERT INTO broadcasts
    (id, tenant_id, type_key, audience, topic_id, brand_key, channels, variables, secret_variables_ciphertext,
     secret_keys, send_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`;
const COUNTED_BROADCAST = `SELECT ${BROADCAST_COLUMNS}, ${COUNTS_SQL} AS counts FROM broadcasts b
  WHERE id = $1 AND tenant_id = $2`;
const LIST_BROADCASTS = `SELECT ${BROADCAST_COLUMNS}, ${COUNTS_SQL} AS counts FROM broadcasts b
  WHERE tenant_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::uuid IS NULL OR id < $3::uuid)
  ORDER BY id DESC LIMIT $4`;

/** cancelJobsStatement's text, for the delivery queue's table `table`. */
function cancelQueuedJobsSql(table: string): string {
  return `
    WITH jobs AS (
      UPDATE ${BOSS_SCHEMA}.${table} j SET state = 'cancelled', completed_on = ${BOSS_SCHEMA}.job_now()
       WHERE j.name = '${DELIVER_EVENT_QUEUE}' AND j.state = 'created'
         AND j.id IN (SELECT e.id FROM events e WHERE e.broadcast_id = $1 AND e.status = 'queued')
      RETURNING j.data
    ), held AS (
      SELECT (jsonb_array_elements_text(jobs.data->'event_ids'))::uuid AS id FROM jobs
    )
    UPDATE events e SET status = 'canceled', secret_variables_ciphertext = NULL, updated_at = now()
      FROM held WHERE e.id = held.id AND e.status = 'queued'`;
}

const CANCEL_BROADCAST = `UPDATE broadcasts
    SET status = 'canceled', secret_variables_ciphertext = NULL, completed_at = now(), updated_at = now()
  WHERE id = $1 AND tenant_id = $2 AND status IN ('queued', 'running')`;

/** BROADCAST_COLUMNS qualified by `b`, the alias of broadcasts. */
const QUALIFIED_BROADCAST_COLUMNS = BROADCAST_COLUMNS.split(', ')
  .map((c) => `b.${c.trim()}`)
  .join(', ');
const COMPLETE_BROADCAST = `WITH c AS (SELECT ${COUNTS_SQL} AS counts FROM broadcasts b WHERE b.id = $1)
  UPDATE broadcasts b
     SET status = 'completed', final_counts = c.counts, secret_variables_ciphertext = NULL, completed_at = now(),
         updated_at = now()
    FROM c
   WHERE b.id = $1 AND b.status = 'running' AND b.fanned_out_at IS NOT NULL AND (c.counts->>'pending')::int = 0
   RETURNING ${QUALIFIED_BROADCAST_COLUMNS}, c.counts`;
const FAIL_BROADCAST = `UPDATE broadcasts b
    SET status = 'failed', failure_reason = $2, secret_variables_ciphertext = NULL, completed_at = now(),
        updated_at = now()
  WHERE id = $1 AND status IN ('queued', 'running')
  RETURNING ${QUALIFIED_BROADCAST_COLUMNS}, ${COUNTS_SQL} AS counts`;
const BROADCAST_STATUS = `SELECT status FROM broadcasts WHERE id = $1`;

export function toBroadcastResponse(row: CountedRow): BroadcastResponse {
  return {
    broadcast_id: row.id,
    type: row.type_key,
    audience: row.audience,
    status: row.status,
    targeted: row.targeted,
    events_created: row.events_created,
    counts: row.counts,
    send_at: row.send_at === null ? null : toIsoTimestamp(row.send_at),
    created_at: toIsoTimestamp(row.created_at),
    completed_at: row.completed_at === null ? null : toIsoTimestamp(row.completed_at),
    failure_reason: row.failure_reason,
  };
}

/** Accepts a broadcast (202), honouring an Idempotency-Key as a trigger does. */
export async function createBroadcast(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  request: BroadcastRequest,
  idempotencyKey: string | null,
): Promise<{ status: number; body: BroadcastAccepted }> {
  checkVariableNames(request);
  return withIdempotencyKey(runtime, em, tenantId, idempotencyKey, request, (claim) =>
    acceptBroadcast(runtime, em, tenantId, request, claim),
  );
}

interface BroadcastCheck {
  tenant_found: boolean;
  archived: boolean;
  type_found: boolean;
  brand_found: boolean;
  missing: string[];
  topic_id: string | null;
}

async function acceptBroadcast(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  request: BroadcastRequest,
  claim: IdempotencyClaim | null,
): Promise<BroadcastAccepted> {
  const boss = runtime.boss;
  if (!boss) throw new AppError('service_unavailable', 'The job queue is not running; retry shortly');
  const topicKey = 'topic' in request.audience ? request.audience.topic : null;
  const secretKeys = Object.keys(request.secret_variables);
  const id = newId(runtime.clock.now());
  return em.transactional(async (tx) => {
    const check = (await queryOne<BroadcastCheck>(tx, CHECK, [
      tenantId,
      request.type,
      request.brand ?? null,
      [...Object.keys(request.variables), ...secretKeys],
      topicKey,
    ]))!;
    refuseUnlessAccepted(check, request, topicKey);
    const ciphertext =
      secretKeys.length > 0
        ? runtime.keyRing.encrypt(JSON.stringify(request.secret_variables), broadcastSecretAad(id))
        : null;
    await execute(tx, INSERT_BROADCAST, [
      id,
      tenantId,
      request.type,
      JSON.stringify(request.audience),
      check.topic_id,
      request.brand ?? null,
      request.channels ?? null,
      JSON.stringify(request.variables),
      ciphertext,
      secretKeys,
      request.send_at ?? null,
    ]);
    // The job's id is the broadcast's: the fan-out can never be enqueued twice.
    const startAfter = request.send_at ? new Date(request.send_at) : undefined;
    // The dead letter queue is named on the job too: a queue created before it had one keeps its settings.
    await boss.send(
      BROADCAST_FAN_OUT_QUEUE,
      { broadcast_id: id },
      { db: bossDb(tx), id, startAfter, deadLetter: BROADCAST_FAN_OUT_DEAD_QUEUE },
    );
    const body: BroadcastAccepted = { broadcast_id: id, status: 'queued' };
    if (claim) await completeIdempotencyKey(tx, claim, 202, body);
    return body;
  });
}

function refuseUnlessAccepted(check: BroadcastCheck, request: BroadcastRequest, topicKey: string | null): void {
  if (!check.tenant_found) throw unauthorized('The credential belongs to no tenant', true);
  if (check.archived) throw new AppError('tenant_archived', 'This tenant is archived and cannot send notifications');
  const issues: ValidationIssue[] = [];
  if (!check.type_found)
    issues.push({ loc: ['body', 'type'], msg: `no live notification type "${request.type}"`, type: 'value_error' });
  if (!check.brand_found)
    issues.push({ loc: ['body', 'brand'], msg: `no brand "${request.brand}"`, type: 'value_error' });
  if (topicKey !== null && !check.topic_id)
    issues.push({ loc: ['body', 'audience', 'topic'], msg: `no topic "${topicKey}"`, type: 'value_error' });
  for (const name of check.missing)
    issues.push({ loc: ['body', 'variables', name], msg: `the type requires the variable "${name}"`, type: 'missing' });
  if (issues.length > 0) throw new ValidationFailure(issues);
}

async function countedRow(em: EntityManager, tenantId: string, id: string): Promise<CountedRow> {
  if (!isUuid(id)) throw notFound('Broadcast');
  const row = await queryOne<CountedRow>(em, COUNTED_BROADCAST, [id, tenantId]);
  if (!row) throw notFound('Broadcast');
  return row;
}

/** The broadcast with live counts; a fanned-out broadcast whose events are all final is completed on the way. */
export async function getBroadcast(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  id: string,
): Promise<BroadcastResponse> {
  const row = await countedRow(em, tenantId, id);
  if (
    row.status === 'running' &&
    row.fanned_out_at !== null &&
    row.counts.pending === 0 &&
    (await completeBroadcastIfDone(runtime, em, id))
  ) {
    return toBroadcastResponse(await countedRow(em, tenantId, id));
  }
  return toBroadcastResponse(row);
}

/** The tenant's broadcasts, newest first, paged by an opaque cursor. */
export async function listBroadcasts(
  em: EntityManager,
  tenantId: string,
  filter: BroadcastListQuery,
): Promise<BroadcastPage> {
  const after = filter.cursor ? decodeCursor(filter.cursor) : null;
  const rows = await query<CountedRow>(em, LIST_BROADCASTS, [tenantId, filter.status ?? null, after, filter.limit + 1]);
  const items = rows.slice(0, filter.limit).map(toBroadcastResponse);
  return {
    items,
    next_cursor: rows.length > filter.limit ? encodeCursor(items[items.length - 1]!.broadcast_id) : null,
  };
}

/**
 * Cancels the delivery jobs of a broadcast's events that no worker has fetched yet (one job carries up
 * to 25 of its events and has the id of the first), and marks those events 'canceled', so that no
 * worker fetches them for nothing. The statement embeds the delivery queue's
 * table name, read from pg-boss once.
 */
const cancelJobsStatement = statementPerQueue(async (boss) => {
  const queue = await boss.getQueue(DELIVER_EVENT_QUEUE);
  if (!queue) throw new Error(`queue ${DELIVER_EVENT_QUEUE} does not exist`);
  return cancelQueuedJobsSql(queue.table);
});

/**
 * Stops the fan-out (it checks the status with every page it writes, under the broadcast's row lock)
 * and cancels the events not yet fetched for delivery. 409 for a completed broadcast; cancelling a
 * canceled one changes nothing.
 */
export async function cancelBroadcast(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  id: string,
): Promise<BroadcastResponse> {
  const current = await countedRow(em, tenantId, id);
  if (current.status === 'completed' || current.status === 'failed')
    throw new AppError('conflict', `This broadcast is ${current.status} and cannot be canceled`);
  if (current.status === 'canceled') return toBroadcastResponse(current);
  const boss = runtime.boss;
  if (!boss) throw new AppError('service_unavailable', 'The job queue is not running; retry shortly');
  const statement = await cancelJobsStatement(boss);
  // Its statements lock many of the broadcast's events while the workers store theirs in another
  // order: PostgreSQL may break a deadlock by failing the cancel, which then runs again (it is idempotent).
  await retryOnDeadlock(() =>
    em.transactional(async (tx) => {
      const canceled = await execute(tx, CANCEL_BROADCAST, [id, tenantId]);
      if (canceled === 0) return; // completed or canceled meanwhile: the re-read below tells which
      await execute(tx, statement, [id]);
      // The rest, not final yet: held, waiting in a workflow, or in a job a worker holds (its run finds
      // them canceled when it locks them).
      await cancelByBroadcast(tx, tenantId, id);
      // A fan-out that has not started yet never will.
      await boss.cancel(BROADCAST_FAN_OUT_QUEUE, id, { db: bossDb(tx) });
    }),
  );
  return toBroadcastResponse(await countedRow(em, tenantId, id));
}

const CANCEL_ATTEMPTS = 3;

async function retryOnDeadlock(run: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= CANCEL_ATTEMPTS || !hasSqlState(error, '40P01')) throw error; // deadlock_detected
    }
  }
}

/** True when PostgreSQL failed the statement with this SQLSTATE, however the driver wrapped the error. */
export function hasSqlState(error: unknown, code: string): boolean {
  for (
    let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (e.code === code) return true;
  }
  return false;
}

/**
 * Completes a running broadcast whose fan-out is done and whose events are all final, keeping its
 * final counts, and records `broadcast.completed` in the same transaction; answers whether this call
 * completed it.
 */
export async function completeBroadcastIfDone(runtime: Context, em: EntityManager, id: string): Promise<boolean> {
  const completed = await em.transactional(async (tx) => {
    const row = await queryOne<CountedRow>(tx, COMPLETE_BROADCAST, [id]);
    if (!row) return null;
    const view = toBroadcastResponse(row);
    await recordBroadcastCompleted(tx, row.tenant_id, view);
    return { tenantId: row.tenant_id, view };
  });
  if (!completed) return false;
  runtime.logger.info('broadcast.completed', {
    tenant_id: completed.tenantId,
    broadcast_id: id,
    targeted: completed.view.targeted,
    events_created: completed.view.events_created,
    counts: completed.view.counts,
  });
  return true;
}

/**
 * Records that a broadcast is completed (its fan-out done, every event final), inside the transaction
 * that completes it: the `broadcast.completed` webhook event (the broadcast as GET /v1/broadcasts/{id}
 * shows it) for the tenant's endpoints that listen for it. Called once per broadcast.
 */
export async function recordBroadcastCompleted(
  em: EntityManager,
  tenantId: string,
  broadcast: BroadcastResponse,
): Promise<void> {
  await emitWebhookEvent(em, tenantId, 'broadcast.completed', broadcast);
}

/**
 * Ends a broadcast whose fan-out gave up (its job out of retries): 'failed', with the reason, and
 * `broadcast.completed` recorded (the broadcast as shown, status 'failed') in the same transaction.
 * The events written before the failure are delivered as any others; its counts stay live. A
 * broadcast already final is left alone.
 */
export async function failBroadcast(runtime: Context, broadcastId: string, reason: string): Promise<void> {
  const failed = await runtime.orm.em.fork().transactional(async (tx) => {
    const row = await queryOne<CountedRow>(tx, FAIL_BROADCAST, [broadcastId, reason]);
    if (!row) return null;
    const view = toBroadcastResponse(row);
    await recordBroadcastCompleted(tx, row.tenant_id, view);
    return { tenantId: row.tenant_id, view };
  });
  if (failed)
    runtime.logger.warn('broadcast.failed', {
      tenant_id: failed.tenantId,
      broadcast_id: broadcastId,
      events_created: failed.view.events_created,
      reason,
    });
}

/** Checks a fanned-out broadcast for completion now, then again later until it completes or is canceled. */
export async function scheduleCompletionCheck(runtime: Context, broadcastId: string, checks: number): Promise<void> {
  const delaySeconds = Math.min(30, 1 + checks);
  await runtime.boss!.send(
    BROADCAST_COMPLETION_QUEUE,
    { broadcast_id: broadcastId, checks },
    { startAfter: delaySeconds },
  );
}

/** The completion job's work: complete the broadcast, or look again later while it still runs. */
export async function checkBroadcastCompletion(runtime: Context, broadcastId: string, checks: number): Promise<void> {
  const em = runtime.orm.em.fork();
  if (await completeBroadcastIfDone(runtime, em, broadcastId)) return;
  const row = await queryOne<{ status: string }>(em, BROADCAST_STATUS, [broadcastId]);
  if (row?.status === 'running') await scheduleCompletionCheck(runtime, broadcastId, checks + 1);
}

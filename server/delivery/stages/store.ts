// The store stage. The batched runs store a whole batch's outcome in one statement (storeBatch): the
// inbox run's, and the remote run's when it sent in the transaction holding the events. Deliveries
// are inserted with their final status (no 'pending' row version to update), inbox items
// with their stream ids (each is its own 'notification'; the stream hub derives the counts), the
// events get their final status and their delivery jobs are completed (complete.ts), all from
// data-modifying CTEs. The statement is all or nothing on its own (herald_assert, in the baseline migration), so
// the inbox run needs no transaction around it: it commits once, with the statement.
// The per-event run stores its plan (storePlan) and each attempt's outcome (recordOutcome) as it goes.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, query } from '../../base/db/sql.ts';
import { planEachCall } from '../../base/db/prepared.ts';
import { jsonRowsParameter, jsonRowsSql, type JsonRowColumns } from '../../base/db/json-rows.ts';
import { statementPerQueue, type PgBoss } from '../../base/queue.ts';
import { streamLockSql, streamNoticesSql } from '../../channels/inbox/events.ts';
import { insertInboxItemsSql, type NewInboxItem } from '../../channels/inbox/channel.ts';
import { touchSentSubscriptionsSql } from '../../channels/push/push-subscriptions.ts';
import type { DeliveryOutcome, DeliveryRow, ProviderAttempt } from '../../channels/types.ts';
import { staysPending } from '../pauses.ts';
import { completionParameters, deliveryJobsCompletionCte, type FetchedJob } from '../complete.ts';
import type { PlannedDelivery } from './plan.ts';
import { EVENT_STATUS_FROM_DELIVERIES } from './rollup.ts';
import { applyEarlyReceipts, mayHaveEarlyReceipt } from '../early-receipts.ts';

export interface StoredDelivery {
  id: string;
  event_id: string;
  tenant_id: string;
  channel: string;
  destination: string;
  provider: string | null;
  /** pending: a remote delivery whose attempt failed and is worth another (the event's job is retried). */
  status: 'delivered' | 'sent' | 'failed' | 'skipped' | 'pending';
  reason: string | null;
  last_error: string | null;
  attempts: number;
  /** What the provider that accepted a remote delivery calls it. */
  provider_message_id?: string | null;
  /** The providers this attempt went through, in order (a failover shows as several). */
  provider_attempts?: ProviderAttempt[] | null;
}

export type StoredItem = NewInboxItem;

/** What a delivery's row holds before its outcome: the event's, the plan's, and its id. */
export type StoredRow = Pick<StoredDelivery, 'id' | 'event_id' | 'tenant_id' | 'channel' | 'destination' | 'provider'>;

/**
 * The columns of a StoredDelivery and of a StoredItem, as storeBatch gives them to its statement; the
 * mostly null ones last, where JSON rows leave them out. An item's tenant and event are its delivery's.
 */
const DELIVERY_COLUMNS = [
  ['id', 'uuid'],
  ['event_id', 'uuid'],
  ['tenant_id', 'uuid'],
  ['channel', 'text'],
  ['destination', 'text'],
  ['status', 'text'],
  ['attempts', 'int'],
  ['provider', 'text'],
  ['reason', 'text'],
  ['last_error', 'text'],
  ['provider_message_id', 'text'],
  ['provider_attempts', 'jsonb'],
] as const satisfies JsonRowColumns<StoredDelivery>;
const ITEM_COLUMNS = [
  ['id', 'uuid'],
  ['delivery_id', 'uuid'],
  ['contact_id', 'uuid'],
  ['type_key', 'text'],
  ['title', 'text'],
  ['body', 'text'],
  ['data', 'jsonb'],
  ['action_url', 'text'],
] as const satisfies JsonRowColumns<StoredItem>;

/**
 * $1 deliveries (StoredDelivery[]), $2 items (StoredItem[]), both as JSON rows (db/json-rows.ts), $3
 * event ids, $4-$7 the completion's parameters (completionParameters).
 */
function storeBatchSql(completedJobsCte: string): string {
  const deliveryColumns = DELIVERY_COLUMNS.map(([name]) => name).join(', ');
  const selected = DELIVERY_COLUMNS.map(([name]) =>
    name === 'provider_attempts' ? `coalesce(provider_attempts, '[]')` : name,
  ).join(', ');
  return `WITH planned AS (
       INSERT INTO deliveries (${deliveryColumns})
       SELECT ${selected} FROM ${jsonRowsSql('$1', DELIVERY_COLUMNS)} AS x
       RETURNING id, event_id, tenant_id, channel, destination, status
     ), touched AS (
       ${touchSentSubscriptionsSql('planned')}
     ), input AS (
       SELECT * FROM ${jsonRowsSql('$2', ITEM_COLUMNS)} AS x
     ), stream_locks AS (
       SELECT count(${streamLockSql('contact_id')}) AS n FROM (SELECT DISTINCT contact_id FROM input ORDER BY contact_id) AS contacts
     ), stored AS (
       -- Stream ids drawn only once every lock is held: each row is joined with the locks' one row,
       -- which the aggregate yields after taking them all; in item order.
       ${insertInboxItemsSql({
         values: `i.id, p.tenant_id, i.contact_id, p.event_id, i.delivery_id, i.type_key, i.title, i.body, i.action_url, coalesce(i.data, '{}')`,
         from: 'input i JOIN planned p ON p.id = i.delivery_id CROSS JOIN stream_locks',
         orderBy: 'i.n',
         onConflict: 'fail',
         returning: 'contact_id',
       })}
     ), rolled_up AS (
       -- Only events still waiting to start (re-read after any transaction holding one ends); the
       -- assertion below undoes the statement if one was not.
       UPDATE events e
          SET status = s.status, updated_at = now(),
              secret_variables_ciphertext = CASE WHEN s.status = 'processing' THEN e.secret_variables_ciphertext ELSE NULL END
         FROM (SELECT ev.id, ${EVENT_STATUS_FROM_DELIVERIES} AS status
                 FROM unnest($3::uuid[]) AS ev(id) LEFT JOIN planned d ON d.event_id = ev.id
                GROUP BY ev.id) AS s
        WHERE e.id = s.id AND e.status IN ('queued', 'scheduled')
       RETURNING e.id
     ), ${completedJobsCte}
     SELECT herald_assert((SELECT count(*) FROM rolled_up) = cardinality($3::uuid[]), 'batch store: an event of the batch has started elsewhere') AS events_queued,
            herald_assert((SELECT count(*) FROM planned) = jsonb_array_length($1::jsonb) AND (SELECT count(*) FROM stored) = jsonb_array_length($2::jsonb),
                          'batch store: fewer rows stored than given') AS rows_stored,
            ${streamNoticesSql('SELECT contact_id FROM stored')} AS notices`;
}

/**
 * The columns of a planned delivery, and of one with its event, as storePlan and storePlans give them;
 * the mostly null ones last, where JSON rows leave them out.
 */
const PLANNED_COLUMNS = [
  ['channel', 'text'],
  ['destination', 'text'],
  ['status', 'text'],
  ['provider', 'text'],
  ['reason', 'text'],
] as const satisfies JsonRowColumns<PlannedDelivery>;
const EVENT_PLANNED_COLUMNS = [
  ['event_id', 'uuid'],
  ['tenant_id', 'uuid'],
  ...PLANNED_COLUMNS,
] as const satisfies JsonRowColumns<PlannedDelivery & { event_id: string; tenant_id: string }>;

const STORE_PLAN = `INSERT INTO deliveries (id, event_id, tenant_id, channel, destination, provider, status, reason)
  SELECT gen_random_uuid(), $1, $2, d.channel, d.destination, d.provider, d.status, d.reason
    FROM ${jsonRowsSql('$3', PLANNED_COLUMNS)} AS d
  ON CONFLICT (event_id, channel, destination) DO NOTHING
  RETURNING id, channel, destination, provider, attempts, status`;
const STORE_PLANS = `INSERT INTO deliveries (id, event_id, tenant_id, channel, destination, provider, status, reason)
  SELECT gen_random_uuid(), d.event_id, d.tenant_id, d.channel, d.destination, d.provider, d.status, d.reason
    FROM ${jsonRowsSql('$1', EVENT_PLANNED_COLUMNS)} AS d
  ON CONFLICT (event_id, channel, destination) DO NOTHING
  RETURNING id, event_id, channel, destination, provider, attempts, status`;

const PENDING_DELIVERIES = `SELECT id, channel, destination, provider, attempts FROM deliveries
  WHERE event_id = $1 AND status = 'pending' ORDER BY channel, destination`;

/** An attempt's outcome, as recordOutcomes gives it to its statement. */
const OUTCOME_COLUMNS = [
  ['id', 'uuid'],
  ['status', 'text'],
  ['reason', 'text'],
  ['error', 'text'],
  ['messageId', 'text'],
  ['provider', 'text'],
  ['attempts', 'jsonb'],
] as const satisfies JsonRowColumns<{ id: string } & ReturnType<typeof outcomeColumns>>;

const RECORD_OUTCOME = `WITH recorded AS (
       UPDATE deliveries
          SET status = $2, reason = coalesce($3, reason), last_error = coalesce($4, last_error),
              provider_message_id = coalesce($5, provider_message_id), attempts = attempts + 1, updated_at = now(),
              provider = coalesce($6, provider), provider_attempts = provider_attempts || coalesce($7::jsonb, '[]')
        WHERE id = $1 AND status = 'pending'
       RETURNING channel, destination, status)
     ${touchSentSubscriptionsSql('recorded')}`;
const RECORD_OUTCOMES = planEachCall(`WITH recorded AS (
       UPDATE deliveries d
          SET status = o.status, reason = coalesce(o.reason, d.reason), last_error = coalesce(o.error, d.last_error),
              provider_message_id = coalesce(o."messageId", d.provider_message_id), attempts = d.attempts + 1, updated_at = now(),
              provider = coalesce(o.provider, d.provider), provider_attempts = d.provider_attempts || coalesce(o.attempts, '[]')
         FROM ${jsonRowsSql('$1', OUTCOME_COLUMNS)} AS o
        WHERE d.id = o.id AND d.status = 'pending'
       RETURNING d.channel, d.destination, d.status)
     ${touchSentSubscriptionsSql('recorded')}`);

/** A planned delivery's row for storeBatch, with its id; a skipped one is stored as planned, never attempted. */
export function storedRow(
  event: { id: string; tenant_id: string },
  id: string,
  planned: Pick<PlannedDelivery, 'channel' | 'destination' | 'provider'>,
): StoredRow {
  return {
    id,
    event_id: event.id,
    tenant_id: event.tenant_id,
    channel: planned.channel,
    destination: planned.destination,
    provider: planned.provider,
  };
}

/** A planned delivery stored as skipped, with the plan's reason. */
export function storedSkip(row: StoredRow, reason: string | null): StoredDelivery {
  return { ...row, status: 'skipped', reason, last_error: null, attempts: 0 };
}

/**
 * Stores every delivery of the events (all of them: the events were found waiting to start and unplanned), the
 * items of the delivered ones (with their stream ids) and the events' final statuses, and completes
 * `jobs` (the delivery jobs all of whose events are settled, as fetched; a job no longer active under
 * that attempt is left alone). It needs no transaction (it runs in the caller's, if any).
 *
 * Stored whole or not at all: the statement moves each event on from 'queued' (an UPDATE, which waits
 * for a transaction holding the event and then reads the event as that one left it) and asserts in
 * its final SELECT that every event still was, and that every delivery and item went in; the
 * assertion's error undoes the statement. Plain inserts, no ON CONFLICT: no event stays 'queued' once
 * an attempt has stored its deliveries (every attempt that plans moves the status on), and one still
 * storing them holds the event, or makes the inserts here fail on the unique keys (deliveries: event,
 * channel, destination; inbox_items: delivery_id). Either way the statement throws and the per-event
 * path takes over; so it does when two attempts at one event (one whose claim lapsed, and the next)
 * lock in opposite orders and PostgreSQL breaks the deadlock by failing one. Speculative insertion
 * (ON CONFLICT) cost an index probe and a WAL record more per row: about 10% of this statement's WAL.
 *
 * It takes the stream locks of the items' contacts (in contact order) before it draws their stream
 * ids, and holds them until its transaction ends, so each contact's ids commit in increasing order.
 */
export async function storeBatch(
  em: EntityManager,
  boss: PgBoss,
  batch: { deliveries: StoredDelivery[]; items: StoredItem[]; eventIds: string[]; jobs: FetchedJob[] },
): Promise<void> {
  await query(em, await storeStatement(boss), [
    jsonRowsParameter(batch.deliveries, DELIVERY_COLUMNS),
    jsonRowsParameter(batch.items, ITEM_COLUMNS),
    batch.eventIds,
    ...completionParameters(batch.jobs),
  ]);
  await applyEarlyReceipts(
    em,
    batch.deliveries.filter(mayHaveEarlyReceipt).map((d) => d.id),
  );
}

/** The statement per queue instance: it embeds the delivery queue's table name, read from pg-boss once. */
const storeStatement = statementPerQueue((boss) =>
  deliveryJobsCompletionCte(boss, 4).then((cte) => planEachCall(storeBatchSql(cte))),
);

/**
 * Stores an event's plan (the per-event run, inside the transaction holding the event); returns the
 * deliveries it added that are pending. A delivery already stored (same event, channel and
 * destination) is left as it is.
 */
export async function storePlan(
  em: EntityManager,
  event: { id: string; tenant_id: string },
  plan: PlannedDelivery[],
): Promise<DeliveryRow[]> {
  if (plan.length === 0) return [];
  const inserted = await query<DeliveryRow & { status: string }>(em, STORE_PLAN, [
    event.id,
    event.tenant_id,
    jsonRowsParameter(plan, PLANNED_COLUMNS),
  ]);
  return inserted.filter((d) => d.status === 'pending').map(({ status: _status, ...d }) => d);
}

/**
 * storePlan for many events in one statement (the batched remote run, inside the transaction holding
 * the events); returns the deliveries it added that are pending, with their events.
 */
export async function storePlans(
  em: EntityManager,
  plans: Array<{ event: { id: string; tenant_id: string }; plan: PlannedDelivery[] }>,
): Promise<Array<DeliveryRow & { event_id: string }>> {
  const rows = plans.flatMap(({ event, plan }) =>
    plan.map((d) => ({ ...d, event_id: event.id, tenant_id: event.tenant_id })),
  );
  if (rows.length === 0) return [];
  const inserted = await query<DeliveryRow & { event_id: string; status: string }>(em, STORE_PLANS, [
    jsonRowsParameter(rows, EVENT_PLANNED_COLUMNS),
  ]);
  return inserted.filter((d) => d.status === 'pending').map(({ status: _status, ...d }) => d);
}

/** What a delivery's attempt stores (storeBatch): its outcome's columns, attempted once. */
export function storedAttempt(
  outcome: DeliveryOutcome,
  finalAttempt: boolean,
): Pick<StoredDelivery, 'status' | 'reason' | 'last_error' | 'provider_message_id' | 'attempts' | 'provider_attempts'> &
  Partial<Pick<StoredDelivery, 'provider'>> {
  const { status, reason, error, messageId, provider, attempts } = outcomeColumns(outcome, finalAttempt);
  return {
    status,
    reason,
    last_error: error,
    provider_message_id: messageId,
    attempts: 1,
    ...(provider !== null ? { provider } : {}),
    provider_attempts: attempts,
  };
}

/** An event's deliveries still pending, optionally of some channels only. */
export async function pendingDeliveries(em: EntityManager, eventId: string): Promise<DeliveryRow[]> {
  return query<DeliveryRow>(em, PENDING_DELIVERIES, [eventId]);
}

/** Stores an attempt's outcome on a still-pending delivery; a retryable failure stays pending unless it was the last attempt. */
export async function recordOutcome(
  em: EntityManager,
  delivery: Pick<DeliveryRow, 'id' | 'channel'>,
  outcome: DeliveryOutcome,
  finalAttempt: boolean,
): Promise<void> {
  const { status, reason, error, messageId, provider, attempts } = outcomeColumns(outcome, finalAttempt);
  await execute(em, RECORD_OUTCOME, [
    delivery.id,
    status,
    reason,
    error,
    messageId,
    provider,
    attempts ? JSON.stringify(attempts) : null,
  ]);
  if (mayHaveEarlyReceipt({ channel: delivery.channel, status, provider_message_id: messageId }))
    await applyEarlyReceipts(em, [delivery.id]);
}

/** recordOutcome for many deliveries in one statement (the batched remote run). */
export async function recordOutcomes(
  em: EntityManager,
  outcomes: Array<{ delivery: Pick<DeliveryRow, 'id' | 'channel'>; outcome: DeliveryOutcome; finalAttempt: boolean }>,
): Promise<void> {
  if (outcomes.length === 0) return;
  const rows = outcomes.map(({ delivery, outcome, finalAttempt }) => ({
    id: delivery.id,
    channel: delivery.channel,
    ...outcomeColumns(outcome, finalAttempt),
  }));
  await execute(em, RECORD_OUTCOMES, [jsonRowsParameter(rows, OUTCOME_COLUMNS)]);
  await applyEarlyReceipts(
    em,
    rows
      .filter((r) => mayHaveEarlyReceipt({ channel: r.channel, status: r.status, provider_message_id: r.messageId }))
      .map((r) => r.id),
  );
}

interface OutcomeColumns {
  status: StoredDelivery['status'];
  reason: string | null;
  error: string | null;
  messageId: string | null;
  /** The provider that answered last (the one that sent it, after a failover); null: the planned one stays. */
  provider: string | null;
  attempts: ProviderAttempt[] | null;
}

/** What an outcome stores: a failure that stays pending (pauses.ts staysPending) is stored as pending. */
function outcomeColumns(outcome: DeliveryOutcome, finalAttempt: boolean): OutcomeColumns {
  if (outcome.status === 'skipped')
    return { status: 'skipped', reason: outcome.reason, error: null, messageId: null, provider: null, attempts: null };
  const provider = outcome.provider ?? null;
  const attempts = outcome.providerAttempts?.length ? outcome.providerAttempts : null;
  if (outcome.status === 'failed')
    return {
      status: staysPending(outcome, finalAttempt) ? 'pending' : 'failed',
      reason: null,
      error: truncate(outcome.error),
      messageId: null,
      provider,
      attempts,
    };
  return {
    status: outcome.status,
    reason: null,
    error: null,
    messageId: outcome.providerMessageId ?? null,
    provider,
    attempts,
  };
}

/** A last_error short enough to store. */
export function truncate(text: string): string {
  return text.length > 1000 ? `${text.slice(0, 997)}...` : text;
}

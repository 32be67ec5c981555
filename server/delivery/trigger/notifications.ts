// Triggering notifications and reading their events. A trigger is written by one statement, hence in
// one transaction (trigger-batch.ts, which also shares statements among concurrent triggers): claim of
// the idempotency key aside (its own statement, see idempotency.ts), it checks the tenant and the type,
// upserts the recipients as contacts, inserts one event per recipient (secret variables encrypted) and
// enqueues them in pg-boss delivery jobs (server/delivery/enqueue.ts). The 202 is answered only after
// the commit: nothing accepted is lost, nothing uncommitted is sent. The workers are woken after the
// commit (server/delivery/enqueue.ts says why not inside it).
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, ValidationFailure, invalidField, type ValidationIssue } from '../../base/errors.ts';
import { decodeCursor, encodeCursor } from '../../base/cursor.ts';
import { isUuid, newId } from '../../base/ids.ts';
import { query, queryOne } from '../../base/db/sql.ts';
import type { Context } from '../../base/context.ts';
import { RATE_POLICIES, tenantOverride, type RateCheck } from '../../base/rate-limit.ts';
import { contactUpsertInput } from '../../resources/contact-upsert.ts';
import type { ContactFields } from '../../schemas/contacts.ts';
import { TriggerBatcher, writeTriggers, type TriggerInput, type TriggerOutcome } from './batch.ts';
import type { ProviderAttempt } from '../../channels/types.ts';
import { unauthorized } from '../../base/auth/credentials.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  requestHash,
  type IdempotencyClaim,
} from './idempotency.ts';
import type {
  EventListQuery,
  EventPage,
  EventResponse,
  TriggerRequest,
  TriggerResponse,
} from '../../schemas/notifications.ts';
import type { StepState } from '../../schemas/workflows.ts';
import { wakeDeliveryWorkers } from '../enqueue.ts';
import { toIsoTimestamp, toIsoTimestampOrNull } from '../../base/timestamps.ts';
import { secretVariablesAad } from '../../base/crypto/aad.ts';
import { wakeWhenDue } from '../schedule.ts';
import { cancelById, cancelByKey } from '../cancel.ts';

/** What secret values look like wherever Herald shows an event. */
export const SECRET_MASK = '********';

// server/delivery/worker.ts decrypts the secret variables with the context it imports from here.
export { secretVariablesAad };

export interface TriggerResult {
  status: number;
  body: TriggerResponse;
}

/**
 * An event's columns with its deliveries, read in the same statement, so in one snapshot: read
 * apart, a delivery stored and rolled up between the two reads would show beside the status it moved
 * the event on from.
 */
const EVENT_COLUMNS = `id, type_key, external_id, contact_id, broadcast_id, status, created_at, updated_at, variables, secret_keys, send_at,
       cancellation_key, digest_event_id, steps,
       (SELECT coalesce(json_agg(json_build_object('channel', d.channel, 'status', d.status, 'reason', d.reason, 'provider', d.provider,
                                                   'attempts', d.attempts, 'last_error', d.last_error, 'updated_at', d.updated_at,
                                                   'provider_attempts', d.provider_attempts,
                                                   'next_attempt_at', CASE WHEN d.status = 'pending' AND d.next_attempt_at > now()
                                                                           THEN d.next_attempt_at END)
                                 ORDER BY d.created_at, d.channel, d.destination), '[]')
          FROM deliveries d WHERE d.event_id = events.id) AS deliveries`;

const EVENT_STATUS = `SELECT status FROM events WHERE id = $1 AND tenant_id = $2`;
const EVENT_BY_ID = `SELECT ${EVENT_COLUMNS} FROM events WHERE id = $1 AND tenant_id = $2`;
const LIST_EVENTS = `SELECT ${EVENT_COLUMNS} FROM events
  WHERE tenant_id = $1
    AND ($2::text IS NULL OR type_key = $2)
    AND ($3::text IS NULL OR status = $3)
    AND ($4::text IS NULL OR external_id = $4)
    AND ($5::uuid IS NULL OR id < $5::uuid)
    AND ($7::uuid IS NULL OR broadcast_id = $7::uuid)
  ORDER BY id DESC
  LIMIT $6`;

const OVERRIDE_TTL_MS = 10_000;
const overrideCache = new Map<string, { value: RateCheck['override']; until: number }>();

/**
 * The trigger's rate-limit bucket for a tenant. Its per-tenant override (tenant_limits) is cached for
 * 10 s per process: one round trip less on the hottest route; a changed limit applies within 10 s.
 */
export async function triggerRateChecks(em: EntityManager, tenantId: string, now: number): Promise<RateCheck[]> {
  let cached = overrideCache.get(tenantId);
  if (!cached || cached.until <= now) {
    cached = { value: await tenantOverride(em, tenantId, RATE_POLICIES.trigger), until: now + OVERRIDE_TTL_MS };
    if (overrideCache.size > 10_000) overrideCache.clear();
    overrideCache.set(tenantId, cached);
  }
  return [{ policy: RATE_POLICIES.trigger, subject: tenantId, override: cached.value }];
}

/** Runs a trigger, with Idempotency-Key semantics when a key is given. */
export async function triggerNotifications(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  request: TriggerRequest,
  idempotencyKey: string | null,
): Promise<TriggerResult> {
  if (!idempotencyKey) return { status: 202, body: await acceptTrigger(runtime, em, tenantId, request, null) };
  const claim: IdempotencyClaim = {
    tenantId,
    key: idempotencyKey,
    requestHash: requestHash(request, runtime.tokens.derive('idempotency')),
    claimedAt: runtime.clock.now(),
  };
  const claimed = await claimIdempotencyKey(em, claim);
  if (claimed.kind === 'replay') return { status: claimed.status, body: claimed.body as TriggerResponse };
  try {
    return { status: 202, body: await acceptTrigger(runtime, em, tenantId, request, claim) };
  } catch (error) {
    await releaseIdempotencyKey(em, claim).catch((e) =>
      runtime.logger.warn('idempotency release failed', { error: e }),
    );
    throw error;
  }
}

const batchers = new WeakMap<Context, TriggerBatcher>();

/**
 * Statements in flight at most per process for triggers without an idempotency key (the API's default
 * pool holds 4 connections, runtime.ts, which rate-limit charges and other routes share). One lane
 * makes the biggest batches and is the rule (trigger-batch.ts); the second is the way past a statement
 * held up on a lock, which would otherwise hold up every trigger of the process.
 */
const TRIGGER_LANES = 2;

function batcherOf(runtime: Context): TriggerBatcher {
  let batcher = batchers.get(runtime);
  if (!batcher) {
    const em = runtime.orm.em.fork();
    batcher = new TriggerBatcher(
      (triggers) => writeTriggers(em, runtime.boss!, triggers),
      TRIGGER_LANES,
      () => wakeDeliveryWorkers(runtime.boss!, runtime.logger),
    );
    batchers.set(runtime, batcher);
  }
  return batcher;
}

async function acceptTrigger(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  request: TriggerRequest,
  claim: IdempotencyClaim | null,
): Promise<TriggerResponse> {
  checkVariableNames(request);
  const sendAt = scheduledTime(request.send_at, runtime.clock.now());
  // One event per distinct recipient, in request order.
  const contacts = contactUpsertInput(request.recipients.map(recipientFields));
  const secretKeys = Object.keys(request.secret_variables);
  const secretJson = secretKeys.length > 0 ? JSON.stringify(request.secret_variables) : null;
  const now = runtime.clock.now();
  const events = contacts.map((recipient) => {
    const id = newId(now);
    return {
      id,
      external_id: recipient.external_id,
      ciphertext: secretJson === null ? null : runtime.keyRing.encrypt(secretJson, secretVariablesAad(id)),
    };
  });
  const trigger: TriggerInput = {
    tenant_id: tenantId,
    type: request.type,
    brand: request.brand ?? null,
    channels: request.channels ?? null,
    variables: request.variables,
    names: [...Object.keys(request.variables), ...secretKeys],
    secret_keys: secretKeys,
    contacts,
    events,
    send_at: toIsoTimestampOrNull(sendAt),
    cancellation_key: request.cancellation_key ?? null,
  };
  const status = sendAt === null ? ('queued' as const) : ('scheduled' as const);
  const afterCommit = () => {
    if (sendAt !== null) wakeWhenDue(runtime.boss!, runtime.logger, [sendAt]);
  };
  const answer = (outcome: TriggerOutcome): TriggerResponse => {
    if (!outcome.tenant_found) throw unauthorized('The credential belongs to no tenant', true);
    if (outcome.archived)
      throw new AppError('tenant_archived', 'This tenant is archived and cannot send notifications');
    const issues: ValidationIssue[] = [];
    if (!outcome.type_found)
      issues.push({ loc: ['body', 'type'], msg: `no live notification type "${request.type}"`, type: 'value_error' });
    if (!outcome.brand_found)
      issues.push({ loc: ['body', 'brand'], msg: `no brand "${request.brand}"`, type: 'value_error' });
    for (const name of outcome.missing)
      issues.push({
        loc: ['body', 'variables', name],
        msg: `the type requires the variable "${name}"`,
        type: 'missing',
      });
    if (issues.length > 0) throw new ValidationFailure(issues);
    if (!outcome.accepted) throw new Error('trigger statement refused a trigger that passed every check');
    return {
      events: events.map((e) => ({
        event_id: e.id,
        external_id: e.external_id,
        contact_id: outcome.contact_ids[e.external_id]!,
        status,
      })),
    };
  };
  if (!claim) {
    const response = answer(await batcherOf(runtime).submit(trigger));
    afterCommit();
    return response;
  }
  // With an idempotency key, the key's answer commits together with the events: a statement of its own
  // inside the request's transaction.
  const body = await em.transactional(async (tx) => {
    const [outcome] = await writeTriggers(tx, runtime.boss!, [trigger]);
    const response = answer(outcome!);
    await completeIdempotencyKey(tx, claim, 202, response);
    return response;
  });
  wakeDeliveryWorkers(runtime.boss!, runtime.logger);
  afterCommit();
  return body;
}

/** How far ahead a send may be scheduled. */
const MAX_SCHEDULE_MS = 90 * 24 * 3600 * 1000;

/** A trigger's send_at as epoch ms when it holds the send for later; null: now (absent, or in the past). */
function scheduledTime(sendAt: string | undefined, now: number): number | null {
  if (sendAt === undefined) return null;
  const at = Date.parse(sendAt);
  if (at > now + MAX_SCHEDULE_MS) throw invalidField(['body', 'send_at'], 'must be at most 90 days ahead');
  return at > now ? at : null;
}

/** Cancels the events with the key that are not final yet (POST /v1/notifications/cancel). */
export async function cancelNotifications(
  em: EntityManager,
  tenantId: string,
  key: string,
): Promise<{ canceled: number }> {
  return { canceled: await cancelByKey(em, tenantId, key) };
}

/** Cancels one event: 404 unknown, 409 when it is final already. */
export async function cancelNotification(em: EntityManager, tenantId: string, eventId: string): Promise<void> {
  if (!isUuid(eventId)) throw notFoundEvent();
  if (await cancelById(em, tenantId, eventId)) return;
  const row = await queryOne<{ status: string }>(em, EVENT_STATUS, [eventId, tenantId]);
  if (!row) throw notFoundEvent();
  throw new AppError('event_final', `The event is ${row.status} already and cannot be canceled`);
}

function recipientFields(recipient: TriggerRequest['recipients'][number]): ContactFields {
  return typeof recipient === 'string' ? { external_id: recipient } : recipient;
}

/** 422 for a name given both as a variable and as a secret variable. */
export function checkVariableNames(request: Pick<TriggerRequest, 'variables' | 'secret_variables'>): void {
  const both = Object.keys(request.secret_variables).filter((k) => Object.hasOwn(request.variables, k));
  if (both.length > 0) {
    throw new ValidationFailure(
      both.map((k) => ({
        loc: ['body', 'secret_variables', k],
        msg: `"${k}" is also given in variables`,
        type: 'value_error',
      })),
    );
  }
}

interface EventRow {
  id: string;
  type_key: string;
  external_id: string;
  contact_id: string | null;
  broadcast_id: string | null;
  status: EventResponse['status'];
  created_at: Date;
  updated_at: Date;
  variables: Record<string, unknown>;
  secret_keys: string[];
  send_at: Date | string | null;
  cancellation_key: string | null;
  digest_event_id: string | null;
  steps: StepState[] | null;
  deliveries: DeliveryStatusRow[];
}

/** A delivery as the event's row nests it (JSON: its timestamp as text). */
interface DeliveryStatusRow {
  channel: EventResponse['deliveries'][number]['channel'];
  status: EventResponse['deliveries'][number]['status'];
  reason: string | null;
  provider: string | null;
  attempts: number;
  last_error: string | null;
  provider_attempts: ProviderAttempt[];
  /** A pending delivery's retry still to come (delivery/retry.ts); null once it runs. */
  next_attempt_at: string | null;
  updated_at: string;
}

/** The event's status with its deliveries; 404 for an unknown id or another tenant's event. */
export async function getEvent(em: EntityManager, tenantId: string, eventId: string): Promise<EventResponse> {
  if (!isUuid(eventId)) throw notFoundEvent();
  const row = await queryOne<EventRow>(em, EVENT_BY_ID, [eventId, tenantId]);
  if (!row) throw notFoundEvent();
  return toEventResponse(row);
}

function notFoundEvent(): AppError {
  return new AppError('not_found', 'Event not found');
}

/** The activity log: newest first, filtered, paged by an opaque cursor (the last event id seen). */
export async function listEvents(em: EntityManager, tenantId: string, filter: EventListQuery): Promise<EventPage> {
  const after = filter.cursor ? decodeCursor(filter.cursor) : null;
  const rows = await query<EventRow>(em, LIST_EVENTS, [
    tenantId,
    filter.type ?? null,
    filter.status ?? null,
    filter.external_id ?? null,
    after,
    filter.limit + 1,
    filter.broadcast_id ?? null,
  ]);
  const page = rows.slice(0, filter.limit);
  const next = rows.length > filter.limit ? encodeCursor(page[page.length - 1]!.id) : null;
  return { items: page.map(toEventResponse), next_cursor: next };
}

function toEventResponse(row: EventRow): EventResponse {
  return {
    event_id: row.id,
    type: row.type_key,
    external_id: row.external_id,
    contact_id: row.contact_id,
    broadcast_id: row.broadcast_id,
    status: row.status,
    created_at: toIsoTimestamp(row.created_at),
    updated_at: toIsoTimestamp(row.updated_at),
    variables: maskedVariables(row.variables, row.secret_keys),
    deliveries: row.deliveries.map((d) => ({
      channel: d.channel,
      status: d.status,
      reason: d.reason,
      provider: d.provider,
      attempts: d.attempts,
      last_error: d.last_error,
      provider_attempts: d.provider_attempts,
      next_attempt_at: toIsoTimestampOrNull(d.next_attempt_at),
      updated_at: toIsoTimestamp(d.updated_at),
    })),
    send_at: row.send_at === null ? null : toIsoTimestamp(row.send_at),
    cancellation_key: row.cancellation_key,
    digest_event_id: row.digest_event_id,
    steps: (row.steps ?? []).map(({ index, kind, status, run_at, reason }) => ({
      index,
      kind,
      status,
      run_at,
      reason,
    })),
  };
}

/** The variables as shown to the tenant: secret ones by name only. */
export function maskedVariables(variables: Record<string, unknown>, secretKeys: string[]): Record<string, unknown> {
  return { ...variables, ...Object.fromEntries(secretKeys.map((k) => [k, SECRET_MASK])) };
}

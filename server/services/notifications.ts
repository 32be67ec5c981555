// Triggering notifications and reading their events. A trigger is one statement, hence one
// transaction: claim of the idempotency key aside (its own statement, see idempotency.ts), it checks
// the tenant and the type, upserts the recipients as contacts, inserts one event per recipient
// (secret variables encrypted) and enqueues one pg-boss delivery job per event. The 202 is answered
// only after the commit: nothing accepted is lost, nothing uncommitted is sent. The workers are woken
// after the commit (server/delivery/enqueue.ts says why not inside it).
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, ValidationFailure, invalidField, type ValidationIssue } from '../errors.ts';
import { isUuid, newId } from '../ids.ts';
import { query, queryOne } from '../db/sql.ts';
import type { Runtime } from '../runtime.ts';
import { RATE_POLICIES, tenantOverride, type RateCheck } from '../rate-limit.ts';
import { contactUpsertInput, contactUpsertStatement, type ContactFields } from './contact-upsert.ts';
import { unauthorized } from '../http/auth.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  requestHash,
  type IdempotencyClaim,
} from './idempotency.ts';
import type { EventListQuery, EventPage, EventResponse, TriggerRequest, TriggerResponse } from '../schemas/notifications.ts';
import { deliveryJobsCte, wakeDeliveryWorkers } from '../delivery/enqueue.ts';
import { statementPerQueue } from '../queue.ts';

/** What secret values look like wherever Herald shows an event. */
export const SECRET_MASK = '********';

/** The additional data binding an event's secret variables to its row (server/crypto/encrypted-columns.ts). */
export function secretVariablesAad(eventId: string): string {
  return `events/${eventId}/secret_variables`;
}

export interface TriggerResult {
  status: number;
  body: TriggerResponse;
}

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
  runtime: Runtime,
  em: EntityManager,
  tenantId: string,
  request: TriggerRequest,
  idempotencyKey: string | null,
): Promise<TriggerResult> {
  if (!idempotencyKey) return { status: 202, body: await acceptTrigger(runtime, em, tenantId, request, null) };
  const claim: IdempotencyClaim = { tenantId, key: idempotencyKey, requestHash: requestHash(request, runtime.tokens.derive('idempotency')) };
  const claimed = await claimIdempotencyKey(em, claim, runtime.clock.now());
  if (claimed.kind === 'replay') return { status: claimed.status, body: claimed.body as TriggerResponse };
  try {
    return { status: 202, body: await acceptTrigger(runtime, em, tenantId, request, claim) };
  } catch (error) {
    await releaseIdempotencyKey(em, claim).catch((e) => runtime.logger.warn('idempotency release failed', { error: e }));
    throw error;
  }
}

/** The statement per queue instance: it embeds the queue's table name, read from pg-boss once. */
const triggerStatement = statementPerQueue((boss) => deliveryJobsCte(boss, 'inserted').then((jobsCte) => buildTriggerStatement(jobsCte)));

/**
 * The trigger's one statement: checks the tenant, the type, the brand and the type's required
 * variables, and only if all pass upserts the recipients as contacts, inserts their events and
 * enqueues one delivery job per event (see server/delivery/enqueue.ts). One statement is one
 * transaction: all of it commits, or none. A refused trigger writes nothing and reports why. The
 * tenant row is not locked (every trigger would contend on it): a trigger racing an archive may
 * still be accepted, and fan-out then skips it.
 * $1 tenant, $2 type, $3 brand, $4 channels, $5 variables, $6 names given (variables and secret
 * variables), $7 contacts (ContactUpsertInput[], external_id order: concurrent triggers lock contact
 * rows in the same order, so they cannot deadlock), $8 events [{id, external_id, ciphertext}] in
 * request order, $9 secret variable names.
 */
const buildTriggerStatement = (jobsCte: string) => `
  WITH checked AS (
    SELECT t.archived_at IS NOT NULL AS archived,
           nt.key IS NOT NULL AS type_found,
           ($3::text IS NULL OR EXISTS (SELECT 1 FROM brands b WHERE b.tenant_id = t.id AND b.key = $3)) AS brand_found,
           ARRAY(SELECT v->>'name' FROM jsonb_array_elements(coalesce(nt.variables, '[]'::jsonb)) AS v
                  WHERE (v->>'required')::boolean AND NOT (v->>'name' = ANY ($6::text[]))) AS missing
      FROM tenants t
      LEFT JOIN notification_types nt ON nt.tenant_id = t.id AND nt.key = $2 AND nt.deleted_at IS NULL
     WHERE t.id = $1
  ), accepted AS (
    SELECT 1 FROM checked WHERE NOT archived AND type_found AND brand_found AND cardinality(missing) = 0
  ), upserted AS (
    ${contactUpsertStatement('$1', '$7::jsonb', 'EXISTS (SELECT 1 FROM accepted)')}
  ), inserted AS (
    INSERT INTO events (id, tenant_id, type_key, contact_id, external_id, brand_key, channels, variables, secret_variables_ciphertext, secret_keys)
    SELECT (x.e->>'id')::uuid, $1, $2, u.id, u.external_id, $3, $4::text[], $5::jsonb, x.e->>'ciphertext', $9::text[]
      FROM jsonb_array_elements($8::jsonb) WITH ORDINALITY AS x(e, n)
      JOIN upserted u ON u.external_id = x.e->>'external_id'
     ORDER BY x.n
    RETURNING id
  ), ${jobsCte}
  SELECT c.archived, c.type_found, c.brand_found, c.missing,
         (SELECT coalesce(json_object_agg(external_id, id), '{}') FROM upserted) AS contact_ids,
         (SELECT count(*) FROM inserted)::int AS inserted,
         (SELECT count(*) FROM delivery_jobs)::int AS enqueued
    FROM checked c`;

interface TriggerRow {
  archived: boolean;
  type_found: boolean;
  brand_found: boolean;
  missing: string[];
  /** external_id -> contact id, for an accepted trigger. */
  contact_ids: Record<string, string>;
  inserted: number;
  enqueued: number;
}

async function acceptTrigger(
  runtime: Runtime,
  em: EntityManager,
  tenantId: string,
  request: TriggerRequest,
  claim: IdempotencyClaim | null,
): Promise<TriggerResponse> {
  checkVariableNames(request);
  // One event per distinct recipient, in request order.
  const recipients = contactUpsertInput(request.recipients.map(recipientFields));
  const secretKeys = Object.keys(request.secret_variables);
  const secretJson = secretKeys.length > 0 ? JSON.stringify(request.secret_variables) : null;
  const now = runtime.clock.now();
  const events = recipients.map((recipient) => {
    const id = newId(now);
    return {
      id,
      external_id: recipient.external_id,
      ciphertext: secretJson === null ? null : runtime.keyRing.encrypt(secretJson, secretVariablesAad(id)),
    };
  });
  const byExternalId = (a: { external_id: string }, b: { external_id: string }) => (a.external_id < b.external_id ? -1 : a.external_id > b.external_id ? 1 : 0);
  const params = [
    tenantId,
    request.type,
    request.brand ?? null,
    request.channels ?? null,
    JSON.stringify(request.variables),
    [...Object.keys(request.variables), ...secretKeys],
    JSON.stringify([...recipients].sort(byExternalId)),
    JSON.stringify(events),
    secretKeys,
  ];
  const statement = await triggerStatement(runtime.boss!);
  // Without an idempotency key the statement is its own transaction; with one, the key's answer
  // commits together with the events.
  const run = async (tx: EntityManager): Promise<TriggerResponse> => {
    const row = await queryOne<TriggerRow>(tx, statement, params);
    if (!row) throw unauthorized('The credential belongs to no tenant', true);
    if (row.archived) throw new AppError('tenant_archived', 'This tenant is archived and cannot send notifications');
    const issues: ValidationIssue[] = [];
    if (!row.type_found) issues.push({ loc: ['body', 'type'], msg: `no live notification type "${request.type}"`, type: 'value_error' });
    if (!row.brand_found) issues.push({ loc: ['body', 'brand'], msg: `no brand "${request.brand}"`, type: 'value_error' });
    for (const name of row.missing) issues.push({ loc: ['body', 'variables', name], msg: `the type requires the variable "${name}"`, type: 'missing' });
    if (issues.length > 0) throw new ValidationFailure(issues);
    // Unreachable unless the statement is broken; if so, better a 500 than a lost notification.
    if (row.inserted !== events.length || row.enqueued !== events.length) {
      throw new Error(`trigger wrote ${row.inserted} events and ${row.enqueued} jobs for ${events.length} recipients`);
    }
    const body: TriggerResponse = {
      events: events.map((e) => ({ event_id: e.id, external_id: e.external_id, contact_id: row.contact_ids[e.external_id]!, status: 'queued' as const })),
    };
    if (claim) await completeIdempotencyKey(tx, claim, 202, body);
    return body;
  };
  const body = await (claim ? em.transactional(run) : run(em));
  wakeDeliveryWorkers(runtime.boss!, runtime.logger);
  return body;
}

function recipientFields(recipient: TriggerRequest['recipients'][number]): ContactFields {
  return typeof recipient === 'string' ? { external_id: recipient } : recipient;
}

function checkVariableNames(request: TriggerRequest): void {
  const both = Object.keys(request.secret_variables).filter((k) => Object.hasOwn(request.variables, k));
  if (both.length > 0) {
    throw new ValidationFailure(
      both.map((k) => ({ loc: ['body', 'secret_variables', k], msg: `"${k}" is also given in variables`, type: 'value_error' })),
    );
  }
}

interface EventRow {
  id: string;
  type_key: string;
  external_id: string;
  contact_id: string | null;
  status: EventResponse['status'];
  created_at: Date;
  updated_at: Date;
  variables: Record<string, unknown>;
  secret_keys: string[];
}

interface DeliveryRow {
  event_id: string;
  channel: EventResponse['deliveries'][number]['channel'];
  status: EventResponse['deliveries'][number]['status'];
  reason: string | null;
  provider: string | null;
  attempts: number;
  last_error: string | null;
  updated_at: Date;
}

const EVENT_COLUMNS = 'id, type_key, external_id, contact_id, status, created_at, updated_at, variables, secret_keys';

/** The event's status with its deliveries; 404 for an unknown id or another tenant's event. */
export async function getEvent(em: EntityManager, tenantId: string, eventId: string): Promise<EventResponse> {
  if (!isUuid(eventId)) throw notFoundEvent();
  const row = await queryOne<EventRow>(em, `SELECT ${EVENT_COLUMNS} FROM events WHERE id = $1 AND tenant_id = $2`, [eventId, tenantId]);
  if (!row) throw notFoundEvent();
  const [view] = await withDeliveries(em, [row]);
  return view!;
}

function notFoundEvent(): AppError {
  return new AppError('not_found', 'Event not found');
}

/** The activity log: newest first, filtered, paged by an opaque cursor (the last event id seen). */
export async function listEvents(em: EntityManager, tenantId: string, filter: EventListQuery): Promise<EventPage> {
  const after = filter.cursor ? decodeCursor(filter.cursor) : null;
  const rows = await query<EventRow>(
    em,
    `SELECT ${EVENT_COLUMNS} FROM events
      WHERE tenant_id = $1
        AND ($2::text IS NULL OR type_key = $2)
        AND ($3::text IS NULL OR status = $3)
        AND ($4::text IS NULL OR external_id = $4)
        AND ($5::uuid IS NULL OR id < $5::uuid)
      ORDER BY id DESC
      LIMIT $6`,
    [tenantId, filter.type ?? null, filter.status ?? null, filter.external_id ?? null, after, filter.limit + 1],
  );
  const page = rows.slice(0, filter.limit);
  const next = rows.length > filter.limit ? encodeCursor(page[page.length - 1]!.id) : null;
  return { items: await withDeliveries(em, page), next_cursor: next };
}

function encodeCursor(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) throw invalidField(['query', 'cursor'], 'invalid cursor');
  return id;
}

async function withDeliveries(em: EntityManager, rows: EventRow[]): Promise<EventResponse[]> {
  if (rows.length === 0) return [];
  const deliveries = await query<DeliveryRow>(
    em,
    `SELECT event_id, channel, status, reason, provider, attempts, last_error, updated_at
       FROM deliveries WHERE event_id = ANY($1::uuid[]) ORDER BY created_at, channel, destination`,
    [rows.map((r) => r.id)],
  );
  const byEvent = new Map<string, DeliveryRow[]>();
  for (const d of deliveries) byEvent.set(d.event_id, [...(byEvent.get(d.event_id) ?? []), d]);
  return rows.map((row) => ({
    event_id: row.id,
    type: row.type_key,
    external_id: row.external_id,
    contact_id: row.contact_id,
    status: row.status,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
    variables: maskedVariables(row.variables, row.secret_keys),
    deliveries: (byEvent.get(row.id) ?? []).map((d) => ({
      channel: d.channel,
      status: d.status,
      reason: d.reason,
      provider: d.provider,
      attempts: d.attempts,
      last_error: d.last_error,
      updated_at: new Date(d.updated_at).toISOString(),
    })),
  }));
}

/** The variables as shown to the tenant: secret ones by name only. */
export function maskedVariables(variables: Record<string, unknown>, secretKeys: string[]): Record<string, unknown> {
  return { ...variables, ...Object.fromEntries(secretKeys.map((k) => [k, SECRET_MASK])) };
}

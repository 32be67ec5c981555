// Delivering one event: plan its deliveries (once), deliver every pending one through its channel,
// record each outcome, roll the event's status up from its deliveries. Every step is idempotent, so a
// job retried after a crash or a failure picks up where the last attempt stopped:
// - the plan is stored once (UNIQUE event_id + channel + destination; the event row is locked while planning);
// - a delivery is sent only while 'pending', under a row lock (SKIP LOCKED: a second worker holding the
//   same job never sends it twice); a final status is never revisited;
// - the inbox item is keyed by delivery id (see channels/inbox.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, query, queryOne } from '../db/sql.ts';
import { KeyUnavailableError } from '../crypto/keyring.ts';
import type { Runtime } from '../runtime.ts';
import type { Channel } from '../schemas/common.ts';
import type { ContactRow } from '../services/contact-upsert.ts';
import { CONTACT_COLUMNS } from '../services/contact-upsert.ts';
import { secretVariablesAad } from '../services/notifications.ts';
import { TemplateError, UnfilledSlotError } from '../templates/engine.ts';
import { channelRegistry, registeredChannels } from './channels/index.ts';
import type { ChannelSender, DeliveryOutcome, DeliveryRow, EventForDelivery } from './channels/types.ts';
import { planDeliveries, type PlannedDelivery } from './plan.ts';

export interface LoadedEvent extends EventForDelivery {
  status: string;
  channels: Channel[] | null;
  contact_id: string | null;
  secret_variables_ciphertext: string | null;
  tenant_archived: boolean;
  channel_defaults: Partial<Record<Channel, boolean>> | null;
  opt_out: boolean | null;
  planned: boolean;
}

export interface ContactWithDestinations extends ContactRow {
  preferences: Array<{ type_key: string; channel: Channel; enabled: boolean }>;
  subscriptions: Array<{ id: string; provider: string }>;
}

export const FINAL_EVENT_STATUSES = new Set(['delivered', 'partially_delivered', 'failed', 'skipped']);

export class RetryableDeliveryError extends Error {
  override name = 'RetryableDeliveryError';
}

/**
 * Processes one event. Throws RetryableDeliveryError when a delivery failed in a way worth retrying
 * (the job is retried with backoff); `finalAttempt` turns such failures into final 'failed' statuses.
 *
 * Local channels (the inbox: a database write) are delivered inside the event's own transaction, each
 * under a savepoint, so planning, storing, publishing and the status roll-up commit once. Remote
 * channels (email, push) send outside it, each under its own row lock.
 */
export async function deliverEvent(runtime: Runtime, eventId: string, options: { finalAttempt: boolean }): Promise<void> {
  const em = runtime.orm.em.fork();
  const retryErrors: string[] = [];
  const noteRetry = (delivery: DeliveryRow, outcome: DeliveryOutcome | null) => {
    if (outcome?.status === 'failed' && outcome.retryable && !options.finalAttempt) retryErrors.push(`${delivery.channel}: ${outcome.error}`);
  };
  const local = await em.transactional(async (tx) => {
    const prepared = await prepareEvent(tx, eventId);
    if (!prepared) return null;
    const variables = readVariables(runtime, prepared.event);
    const remote: DeliveryRow[] = [];
    for (const delivery of prepared.pending) {
      const sender = channelRegistry.get(delivery.channel);
      if (!sender) continue; // unreachable: only registered channels are planned
      if (!prepared.contact || 'error' in variables) {
        const outcome: DeliveryOutcome =
          'error' in variables ? { status: 'failed', error: variables.error, retryable: false } : { status: 'skipped', reason: 'no_destination' };
        await recordOutcome(tx, delivery.id, outcome, options.finalAttempt);
      } else if (sender.local) {
        noteRetry(delivery, await deliverLocal(runtime, tx, sender, delivery, prepared.event, prepared.contact, variables.values, options));
      } else {
        remote.push(delivery);
      }
    }
    // Final when everything was local; 'processing' while remote deliveries remain.
    await rollupEvent(tx, eventId);
    return { event: prepared.event, contact: prepared.contact, variables, remote };
  });
  if (local && local.remote.length > 0 && local.contact && 'values' in local.variables) {
    for (const delivery of local.remote) {
      noteRetry(delivery, await deliverRemote(runtime, em, delivery, local.event, local.contact, local.variables.values, options));
    }
    await rollupEvent(em, eventId);
  }
  if (retryErrors.length > 0) throw new RetryableDeliveryError(retryErrors.join('; '));
}

/** The variables to render with: the public ones plus the decrypted secret ones (never logged, never stored). */
export function readVariables(runtime: Runtime, event: LoadedEvent): { values: Record<string, unknown> } | { error: string } {
  if (!event.secret_variables_ciphertext) return { values: event.variables };
  try {
    const secrets = JSON.parse(runtime.keyRing.decrypt(event.secret_variables_ciphertext, secretVariablesAad(event.id))) as Record<string, unknown>;
    return { values: { ...event.variables, ...secrets } };
  } catch (error) {
    return {
      error:
        error instanceof KeyUnavailableError
          ? 'secret variables are unreadable: their encryption key is no longer in the key ring'
          : 'secret variables could not be decrypted',
    };
  }
}

/**
 * Joins `nt`, the type deciding an event's channels: the live type, or, for an event whose type was
 * deleted after the trigger, the deleted one (events already accepted still follow it).
 */
export function eventTypeJoin(eventAlias: string): string {
  return `LEFT JOIN LATERAL (
         SELECT channel_defaults, opt_out FROM notification_types
          WHERE tenant_id = ${eventAlias}.tenant_id AND key = ${eventAlias}.type_key
          ORDER BY deleted_at DESC NULLS FIRST LIMIT 1
       ) nt ON true`;
}

/**
 * Whether an event's deliveries have been planned. A scalar subquery, one index probe per event, not
 * EXISTS: PostgreSQL may turn EXISTS into a hashed subplan that reads the whole deliveries table, and
 * did so on every batch while the young table's statistics still said it was small.
 */
export function eventPlannedSql(eventAlias: string): string {
  return `((SELECT true FROM deliveries d WHERE d.event_id = ${eventAlias}.id LIMIT 1) IS NOT NULL)`;
}

/** Locks events (in id order, so concurrent batches cannot deadlock) with what planning needs. */
export async function lockEvents(tx: EntityManager, eventIds: string[]): Promise<LoadedEvent[]> {
  return query<LoadedEvent>(
    tx,
    `SELECT e.id, e.tenant_id, e.type_key, e.brand_key, e.external_id, e.variables, e.status, e.channels, e.contact_id,
            e.secret_variables_ciphertext, t.archived_at IS NOT NULL AS tenant_archived,
            nt.channel_defaults, nt.opt_out,
            ${eventPlannedSql('e')} AS planned
       FROM events e
       JOIN tenants t ON t.id = e.tenant_id
       ${eventTypeJoin('e')}
      WHERE e.id = ANY($1::uuid[])
      ORDER BY e.id
        FOR UPDATE OF e`,
    [eventIds],
  );
}

/** Contacts with their preferences for the given types and their push subscriptions, by id. */
export async function loadContacts(tx: EntityManager, contactIds: string[], typeKeys: string[]): Promise<Map<string, ContactWithDestinations>> {
  const rows = await query<ContactWithDestinations>(
    tx,
    `SELECT ${CONTACT_COLUMNS},
            coalesce((SELECT json_agg(json_build_object('type_key', p.type_key, 'channel', p.channel, 'enabled', p.enabled)) FROM contact_preferences p
                       WHERE p.contact_id = c.id AND p.type_key = ANY($2::text[])), '[]') AS preferences,
            coalesce((SELECT json_agg(json_build_object('id', s.id, 'provider', s.provider) ORDER BY s.created_at) FROM push_subscriptions s
                       WHERE s.contact_id = c.id), '[]') AS subscriptions
       FROM contacts c WHERE c.id = ANY($1::uuid[])`,
    [[...new Set(contactIds)], [...new Set(typeKeys)]],
  );
  return new Map(rows.map((r) => [r.id, r]));
}

/** The deliveries an event gets: its type's channel defaults and opt-out policy, the contact's preferences and destinations. */
export function planEvent(event: LoadedEvent, contact: ContactWithDestinations | null): PlannedDelivery[] {
  const preferences = Object.fromEntries((contact?.preferences ?? []).filter((p) => p.type_key === event.type_key).map((p) => [p.channel, p.enabled]));
  return planDeliveries({
    channelDefaults: event.channel_defaults ?? {},
    requestedChannels: event.channels,
    optOutPolicy: event.opt_out ?? true,
    preferences,
    tenantArchived: event.tenant_archived,
    contactEmail: contact?.email ?? null,
    contactExists: contact !== null,
    subscriptions: contact?.subscriptions ?? [],
    registered: registeredChannels(),
  });
}

/** Locks the event, plans its deliveries on the first attempt, and returns what is still pending. */
async function prepareEvent(
  tx: EntityManager,
  eventId: string,
): Promise<{ event: LoadedEvent; contact: ContactRow | null; pending: DeliveryRow[] } | null> {
  const [event] = await lockEvents(tx, [eventId]);
  if (!event || FINAL_EVENT_STATUSES.has(event.status)) return null;
  const contact = event.contact_id ? ((await loadContacts(tx, [event.contact_id], [event.type_key])).get(event.contact_id) ?? null) : null;
  let pending: DeliveryRow[];
  if (!event.planned) {
    const plan = planEvent(event, contact);
    const inserted =
      plan.length === 0
        ? []
        : await query<DeliveryRow & { status: string }>(
            tx,
            `INSERT INTO deliveries (id, event_id, tenant_id, channel, destination, provider, status, reason)
             SELECT gen_random_uuid(), $1, $2, d->>'channel', d->>'destination', d->>'provider', d->>'status', d->>'reason'
               FROM jsonb_array_elements($3::jsonb) AS d
             ON CONFLICT (event_id, channel, destination) DO NOTHING
             RETURNING id, channel, destination, provider, attempts, status`,
            [event.id, event.tenant_id, JSON.stringify(plan)],
          );
    pending = inserted.filter((d) => d.status === 'pending').map(({ status: _status, ...d }) => d);
  } else {
    pending = await query<DeliveryRow>(
      tx,
      `SELECT id, channel, destination, provider, attempts FROM deliveries WHERE event_id = $1 AND status = 'pending' ORDER BY channel, destination`,
      [event.id],
    );
  }
  return { event, contact, pending };
}

/** Delivers a local (database) delivery under a savepoint of the event's transaction. */
async function deliverLocal(
  runtime: Runtime,
  tx: EntityManager,
  sender: ChannelSender,
  delivery: DeliveryRow,
  event: EventForDelivery,
  contact: ContactRow,
  renderVariables: Record<string, unknown>,
  options: { finalAttempt: boolean },
): Promise<DeliveryOutcome> {
  try {
    return await tx.transactional(async (savepoint) => {
      const outcome = await attempt(runtime, savepoint, sender, delivery, event, contact, renderVariables);
      await recordOutcome(savepoint, delivery.id, outcome, options.finalAttempt);
      return outcome;
    });
  } catch (error) {
    // Rolled back to the savepoint: count the attempt, keep the error, retry later.
    const outcome = unexpectedFailure(runtime, event, delivery, error);
    await recordOutcome(tx, delivery.id, outcome, options.finalAttempt);
    return outcome;
  }
}

/** Sends a remote delivery under its own row lock and records the outcome in the same transaction. */
async function deliverRemote(
  runtime: Runtime,
  em: EntityManager,
  delivery: DeliveryRow,
  event: EventForDelivery,
  contact: ContactRow,
  renderVariables: Record<string, unknown>,
  options: { finalAttempt: boolean },
): Promise<DeliveryOutcome | null> {
  const sender = channelRegistry.get(delivery.channel)!;
  try {
    return await em.transactional(async (tx) => {
      const locked = await queryOne(tx, `SELECT id FROM deliveries WHERE id = $1 AND status = 'pending' FOR UPDATE SKIP LOCKED`, [delivery.id]);
      if (!locked) return null; // already final, or another worker holds it
      const outcome = await attempt(runtime, tx, sender, delivery, event, contact, renderVariables);
      await recordOutcome(tx, delivery.id, outcome, options.finalAttempt);
      return outcome;
    });
  } catch (error) {
    const outcome = unexpectedFailure(runtime, event, delivery, error);
    await recordOutcome(em, delivery.id, outcome, options.finalAttempt);
    return outcome;
  }
}

async function attempt(
  runtime: Runtime,
  em: EntityManager,
  sender: ChannelSender,
  delivery: DeliveryRow,
  event: EventForDelivery,
  contact: ContactRow,
  renderVariables: Record<string, unknown>,
): Promise<DeliveryOutcome> {
  try {
    return await sender.deliver({ runtime, em, delivery, event, contact, renderVariables });
  } catch (error) {
    if (!(error instanceof UnfilledSlotError || error instanceof TemplateError)) throw error;
    // A template problem does not heal by retrying: final failure, naming the slot.
    return { status: 'failed', error: error.message, retryable: false };
  }
}

function unexpectedFailure(runtime: Runtime, event: EventForDelivery, delivery: DeliveryRow, error: unknown): DeliveryOutcome {
  const message = error instanceof Error ? error.message : String(error);
  runtime.logger.warn('delivery attempt failed', { event_id: event.id, delivery_id: delivery.id, channel: delivery.channel, error: message });
  return { status: 'failed', error: message, retryable: true };
}

/** Stores an attempt's outcome on a still-pending delivery; a retryable failure stays pending unless it was the last attempt. */
export async function recordOutcome(em: EntityManager, deliveryId: string, outcome: DeliveryOutcome, finalAttempt: boolean): Promise<void> {
  const [status, reason, error, messageId] =
    outcome.status === 'skipped'
      ? ['skipped', outcome.reason, null, null]
      : outcome.status === 'failed'
        ? [outcome.retryable && !finalAttempt ? 'pending' : 'failed', null, truncate(outcome.error), null]
        : [outcome.status, null, null, outcome.providerMessageId ?? null];
  await execute(
    em,
    `UPDATE deliveries
        SET status = $2, reason = coalesce($3, reason), last_error = coalesce($4, last_error),
            provider_message_id = coalesce($5, provider_message_id), attempts = attempts + 1, updated_at = now()
      WHERE id = $1 AND status = 'pending'`,
    [deliveryId, status, reason, error, messageId],
  );
}

/** A last_error short enough to store. */
export function truncate(text: string): string {
  return text.length > 1000 ? `${text.slice(0, 997)}...` : text;
}

/**
 * The event's status from its deliveries (DESIGN.md): processing while any is pending; skipped when
 * all were skipped (or there were none); delivered when every one not skipped succeeded; failed when
 * every one not skipped failed; partially_delivered otherwise. A final event drops its secret
 * variables' ciphertext: they were needed only to render.
 */
export async function rollupEvent(em: EntityManager, eventId: string): Promise<void> {
  await rollupEvents(em, [eventId]);
}

/** The roll-up as an aggregate over the event's deliveries `d` (grouped by event; no rows: skipped). */
export const EVENT_STATUS_FROM_DELIVERIES = `CASE
                WHEN count(d.id) FILTER (WHERE d.status = 'pending') > 0 THEN 'processing'
                WHEN count(d.id) FILTER (WHERE d.status <> 'skipped') = 0 THEN 'skipped'
                WHEN count(d.id) FILTER (WHERE d.status IN ('sent', 'delivered')) = count(d.id) FILTER (WHERE d.status <> 'skipped') THEN 'delivered'
                WHEN count(d.id) FILTER (WHERE d.status = 'failed') = count(d.id) FILTER (WHERE d.status <> 'skipped') THEN 'failed'
                ELSE 'partially_delivered'
              END`;

export async function rollupEvents(em: EntityManager, eventIds: string[]): Promise<void> {
  await execute(
    em,
    `WITH s AS (
       SELECT e.id,
              ${EVENT_STATUS_FROM_DELIVERIES} AS status
         FROM events e LEFT JOIN deliveries d ON d.event_id = e.id
        WHERE e.id = ANY($1::uuid[])
        GROUP BY e.id
     )
     UPDATE events e
        SET status = s.status, updated_at = now(),
            secret_variables_ciphertext = CASE WHEN s.status = 'processing' THEN e.secret_variables_ciphertext ELSE NULL END
       FROM s
      WHERE e.id = s.id AND e.status IS DISTINCT FROM s.status`,
    [eventIds],
  );
}

/**
 * Retries exhausted (the dead-letter queue): whatever is still pending failed for good, keeping its
 * last error. An event that never got planned (every attempt failed before) fails as a whole.
 */
export async function finaliseExhaustedEvent(runtime: Runtime, eventId: string): Promise<void> {
  const em = runtime.orm.em.fork();
  await em.transactional(async (tx) => {
    await execute(
      tx,
      `UPDATE deliveries SET status = 'failed', last_error = coalesce(last_error, 'retries exhausted'), updated_at = now()
        WHERE event_id = $1 AND status = 'pending'`,
      [eventId],
    );
    const planned = await queryOne(tx, `SELECT 1 FROM deliveries WHERE event_id = $1 LIMIT 1`, [eventId]);
    if (planned) await rollupEvent(tx, eventId);
    else
      await execute(
        tx,
        `UPDATE events SET status = 'failed', secret_variables_ciphertext = NULL, updated_at = now()
          WHERE id = $1 AND status IN ('queued', 'processing')`,
        [eventId],
      );
  });
}

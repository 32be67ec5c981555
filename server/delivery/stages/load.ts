// The load stage: one statement that reads a batch of events with everything the later stages need
// (the type's policy and workflow, the tenant's state and default language, the brand to render with,
// the contact with its preferences for the type, push subscriptions, chat destinations and quiet hours). The batched run
// loads without locks (its store statement checks the events itself, store.ts); the per-event run
// loads its event locked, inside the transaction that plans and stores it.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../../base/db/sql.ts';
import { planEachCall } from '../../base/db/prepared.ts';
import type { Channel } from '../../schemas/common.ts';
import type { Workflow, StepState } from '../../schemas/workflows.ts';
import { CONTACT_COLUMNS, type ContactRow } from '../../base/db/contacts.ts';
import type { EventForDelivery } from '../../channels/types.ts';

export interface ContactWithDestinations extends ContactRow {
  preferences: Array<{ type_key: string; channel: Channel; enabled: boolean }>;
  subscriptions: Array<{ id: string; provider: string }>;
  /** The contact's chat destinations (server/channels/chat), oldest first. */
  chat_destinations: Array<{ id: string; provider: string }>;
}

export interface LoadedEvent extends EventForDelivery {
  status: string;
  created_at: string;
  channels: Channel[] | null;
  contact_id: string | null;
  secret_variables_ciphertext: string | null;
  tenant_archived: boolean;
  channel_defaults: Partial<Record<Channel, boolean>> | null;
  opt_out: boolean | null;
  bypass_quiet_hours: boolean;
  /** The type's workflow now (an event snapshots it into `steps` on its first run); null: the default. */
  workflow: Workflow | null;
  /** The event's workflow progress; null for an event without a workflow, or not started yet. */
  steps: StepState[] | null;
  /** Whether any delivery of the event has been stored. */
  planned: boolean;
  /** The broadcast that wrote it (its runs are bulk jobs, delivery/enqueue.ts); null for a trigger's. */
  broadcast_id: string | null;
  contact: ContactWithDestinations | null;
}

const EVENT_COLUMNS =
  'id, tenant_id, type_key, brand_key, external_id, variables, status, channels, contact_id, secret_variables_ciphertext, steps, broadcast_id, created_at';

/**
 * What depends only on an event's (tenant, type, brand), its kind. The load statement answers them on
 * the first event of each kind only (in id order), null on the others, which withKindColumns fills
 * in: a batch of 625 events is mostly one kind, and its brand and type columns, read and parsed once,
 * are not sent 625 times.
 */
const KIND_COLUMNS = [
  'tenant_archived',
  'default_language',
  'channel_defaults',
  'opt_out',
  'workflow',
  'bypass_quiet_hours',
  'brand',
  'default_brand_key',
] as const satisfies ReadonlyArray<keyof LoadedEvent>;

function loadSql(events: string): string {
  return `WITH ev AS MATERIALIZED (
       ${events}
     ), kinds AS MATERIALIZED (
       SELECT k.tenant_id, k.type_key, k.brand_key, k.first_id,
              t.archived_at IS NOT NULL AS tenant_archived, t.default_language,
              nt.channel_defaults, nt.opt_out, nt.workflow, coalesce(nt.bypass_quiet_hours, false) AS bypass_quiet_hours,
              (SELECT json_build_object('id', b.id, 'key', b.key, 'values', b."values", 'sender', b.sender, 'is_default', b.is_default)
                 FROM brands b
                WHERE b.tenant_id = k.tenant_id AND (b.key = k.brand_key OR b.is_default)
                ORDER BY b.is_default -- the named brand before the default
                LIMIT 1) AS brand,
              (SELECT key FROM brands WHERE tenant_id = k.tenant_id AND is_default) AS default_brand_key
         FROM (SELECT DISTINCT ON (tenant_id, type_key, brand_key) tenant_id, type_key, brand_key, id AS first_id
                 FROM ev ORDER BY tenant_id, type_key, brand_key, id) AS k
         JOIN tenants t ON t.id = k.tenant_id
         ${eventTypeJoin('k')}
     )
     SELECT ev.*, ${KIND_COLUMNS.map((column) => `CASE WHEN ev.id = kinds.first_id THEN kinds.${column} END AS ${column}`).join(', ')},
            ${eventPlannedSql('ev')} AS planned,
            (SELECT row_to_json(c) FROM (
               SELECT ${CONTACT_COLUMNS},
                      coalesce((SELECT json_agg(json_build_object('type_key', p.type_key, 'channel', p.channel, 'enabled', p.enabled))
                                  FROM contact_preferences p WHERE p.contact_id = contacts.id AND p.type_key = ev.type_key), '[]') AS preferences,
                      coalesce((SELECT json_agg(json_build_object('id', s.id, 'provider', s.provider) ORDER BY s.created_at)
                                  FROM push_subscriptions s WHERE s.contact_id = contacts.id), '[]') AS subscriptions,
                      coalesce((SELECT json_agg(json_build_object('id', cd.id, 'provider', cd.provider) ORDER BY cd.created_at, cd.id)
                                  FROM chat_destinations cd WHERE cd.contact_id = contacts.id), '[]') AS chat_destinations
                 FROM contacts WHERE contacts.id = ev.contact_id
             ) c) AS contact
       FROM ev
       JOIN kinds ON kinds.tenant_id = ev.tenant_id AND kinds.type_key = ev.type_key AND kinds.brand_key IS NOT DISTINCT FROM ev.brand_key
      ORDER BY ev.id`;
}

const LOAD = planEachCall(loadSql(`SELECT ${EVENT_COLUMNS} FROM events WHERE id = ANY($1::uuid[])`));
const LOAD_ONE_LOCKED = loadSql(`SELECT ${EVENT_COLUMNS} FROM events WHERE id = $1 FOR UPDATE`);

/** The events the batched remote run may take, in id order, locked; $1 the events' ids. */
function newWithoutWorkflowSql(columns: string): string {
  return `SELECT ${columns}
     FROM events e ${eventTypeJoin('e')}
    WHERE e.id = ANY($1::uuid[]) AND e.status IN ('queued', 'scheduled') AND e.steps IS NULL AND nt.workflow IS NULL
    ORDER BY e.id FOR UPDATE OF e SKIP LOCKED`;
}

const CLAIM_NEW_WITHOUT_WORKFLOW = planEachCall(
  loadSql(
    newWithoutWorkflowSql(
      EVENT_COLUMNS.split(', ')
        .map((c) => `e.${c}`)
        .join(', '),
    ),
  ),
);
const LOCK_NEW_WITHOUT_WORKFLOW = planEachCall(newWithoutWorkflowSql('e.id'));

/**
 * Joins `nt`, the type deciding an event's channels: the live type, or, for an event whose type was
 * deleted after the trigger, the deleted one (events already accepted still follow it).
 */
export function eventTypeJoin(eventAlias: string): string {
  return `LEFT JOIN LATERAL (
         SELECT channel_defaults, opt_out, workflow, bypass_quiet_hours FROM notification_types
          WHERE tenant_id = ${eventAlias}.tenant_id AND key = ${eventAlias}.type_key
          ORDER BY deleted_at DESC NULLS FIRST LIMIT 1
       ) nt ON true`;
}

/**
 * Whether an event's deliveries have been planned. A scalar subquery, one index probe per event, not
 * EXISTS: PostgreSQL may turn EXISTS into a hashed subplan that reads the whole deliveries table, as it
 * does while a young table's statistics still say it is small.
 */
export function eventPlannedSql(eventAlias: string): string {
  return `((SELECT true FROM deliveries d WHERE d.event_id = ${eventAlias}.id LIMIT 1) IS NOT NULL)`;
}

/**
 * Loads the events, in id order, without locking them (the batched run). What depends only on the
 * tenant, the type and the brand (the tenant's state, the type's policy, the brands) is looked up and
 * answered once per distinct (tenant, type, brand) of the batch, not once per event: a batch is mostly
 * one tenant's events of one type.
 */
export async function loadEvents(em: EntityManager, eventIds: string[]): Promise<LoadedEvent[]> {
  return withKindColumns(await query<LoadedEvent>(em, LOAD, [eventIds]));
}

/**
 * Loads one event, locked until the caller's transaction ends (the per-event run). A prepared
 * statement: planned once per connection, where loadEvents plans its batch on each call, which for a
 * single event costs more than the load itself.
 */
export async function loadEventLocked(em: EntityManager, eventId: string): Promise<LoadedEvent | undefined> {
  const [event] = withKindColumns(await query<LoadedEvent>(em, LOAD_ONE_LOCKED, [eventId]));
  return event;
}

/**
 * Locks and loads, of the given events, only those no run has started (queued or scheduled, no
 * workflow progress) whose type has no workflow, skipping any that another run holds: what the batched
 * remote run may take. The others are left to the per-event run, which waits for its own event only.
 */
export async function claimNewEventsWithoutWorkflow(em: EntityManager, eventIds: string[]): Promise<LoadedEvent[]> {
  return withKindColumns(await query<LoadedEvent>(em, CLAIM_NEW_WITHOUT_WORKFLOW, [eventIds]));
}

/**
 * claimNewEventsWithoutWorkflow for events loaded moments ago without a lock (`loaded` holds each of
 * `eventIds`): locks the same events on the same conditions, checked now, and answers those it locked
 * as they were loaded. What a contact or type changed in between is as if it had changed just after
 * the lock.
 */
export async function claimLoadedNewEventsWithoutWorkflow(
  em: EntityManager,
  eventIds: string[],
  loaded: ReadonlyMap<string, LoadedEvent>,
): Promise<LoadedEvent[]> {
  const locked = await query<{ id: string }>(em, LOCK_NEW_WITHOUT_WORKFLOW, [eventIds]);
  return locked.map(({ id }) => loaded.get(id)!);
}

/** Gives every loaded event the kind columns the statement answered on the first event of its kind. */
function withKindColumns(events: LoadedEvent[]): LoadedEvent[] {
  const firsts = new Map<string, LoadedEvent>();
  let previous: LoadedEvent | undefined;
  for (const event of events) {
    // Events come in id order, mostly in runs of one kind: the previous event answers without a lookup.
    const source = previous && sameKind(previous, event) ? previous : firsts.get(kindKey(event));
    if (source) {
      for (const column of KIND_COLUMNS) (event as unknown as Record<string, unknown>)[column] = source[column];
    } else {
      firsts.set(kindKey(event), event);
    }
    previous = event;
  }
  return events;
}

const sameKind = (a: LoadedEvent, b: LoadedEvent) =>
  a.tenant_id === b.tenant_id && a.type_key === b.type_key && a.brand_key === b.brand_key;
const kindKey = (event: LoadedEvent) =>
  `${event.tenant_id}\n${event.type_key}\n${event.brand_key === null ? '' : `=${event.brand_key}`}`;

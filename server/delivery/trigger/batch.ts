// The trigger's statement, and the batching of concurrent triggers into shared statements.
//
// A trigger is written by one statement, hence one transaction: it checks the tenant, the type, the
// brand and the type's required variables, and only if all pass upserts the recipients as contacts,
// inserts one event per recipient and enqueues them in delivery jobs (server/delivery/enqueue.ts).
// The statement takes a list of triggers and decides each on its own: a refused trigger writes
// nothing and reports why, whatever the others in its statement do.
//
// Why batch: at saturation most of PostgreSQL's work per trigger is per statement and per commit
// (parse, plan, executor start-up, the commit record and its WAL flush), not per row: a trigger for 8
// recipients costs about as much as one for 1. So while the API's statements are in flight, further
// triggers queue in the process, and the next statement writes all of them in one transaction; at
// light load a trigger still runs at once, alone. Every trigger's events and jobs still commit
// together, before its 202 (a batch commits all of its triggers or none), so nothing accepted is lost.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../../base/db/sql.ts';
import type { PgBoss } from '../../base/queue.ts';
import { statementPerQueue } from '../../base/queue.ts';
import { deliveryJobsCte } from '../enqueue.ts';
import { eventsPerJobSql } from '../stages/plan.ts';
import { jsonRows, jsonRowsParameter, jsonRowsSql, type JsonRowColumns } from '../../base/db/json-rows.ts';
import {
  CONTACT_INPUT_COLUMNS,
  contactUpsertSql,
  isBareContact,
  type ContactUpsertInput,
} from '../../resources/contact-upsert.ts';

/** One trigger, ready to write. */
export interface TriggerInput {
  tenant_id: string;
  type: string;
  brand: string | null;
  channels: string[] | null;
  variables: Record<string, unknown>;
  /** The names given, as variables or secret variables (for the type's required variables). */
  names: string[];
  secret_keys: string[];
  /** One row per distinct recipient. */
  contacts: ContactUpsertInput[];
  /** One per recipient, in request order; `ciphertext` holds the encrypted secret variables. */
  events: Array<{ id: string; external_id: string; ciphertext: string | null }>;
  /** When the events' first run is due (RFC 3339), for a send held for later; null: now. */
  send_at: string | null;
  cancellation_key: string | null;
}

/** What the statement decided for one trigger, and what it wrote. */
export interface TriggerOutcome {
  tenant_found: boolean;
  archived: boolean;
  type_found: boolean;
  brand_found: boolean;
  /** The type's required variables the trigger did not give. */
  missing: string[];
  /** All checks passed: its contacts, events and jobs are written. */
  accepted: boolean;
  /** external_id -> contact id, for an accepted trigger. */
  contact_ids: Record<string, string>;
}

/** The required variables of the type row `type` that the text[] `names` does not give. */
export function missingVariablesSql(type: string, names: string): string {
  return `ARRAY(SELECT v->>'name' FROM jsonb_array_elements(coalesce(${type}.variables, '[]'::jsonb)) AS v
                  WHERE (v->>'required')::boolean AND NOT (v->>'name' = ANY (${names})))`;
}

/** The statement per queue instance: it embeds the queue's table name, read from pg-boss once. */
const triggerStatement = statementPerQueue((boss) => deliveryJobsCte(boss, 'to_enqueue').then(triggersSql));

/** A trigger's columns, and its events', as JSON rows (db/json-rows.ts); its contacts are CONTACT_INPUT_COLUMNS rows. */
const TRIGGER_COLUMNS = [
  ['tenant_id', 'uuid'],
  ['type', 'text'],
  ['brand', 'text'],
  ['channels', 'text[]'],
  ['variables', 'jsonb'],
  ['names', 'text[]'],
  ['secret_keys', 'text[]'],
  ['contacts', 'jsonb'],
  ['events', 'jsonb'],
  ['send_at', 'timestamptz'],
  ['cancellation_key', 'text'],
] as const satisfies JsonRowColumns<TriggerInput>;
const EVENT_COLUMNS = [
  ['id', 'uuid'],
  ['external_id', 'text'],
  ['ciphertext', 'text'],
] as const satisfies JsonRowColumns<TriggerInput['events'][number]>;

/**
 * $1 is the triggers, JSON rows of TriggerInput (writeTriggers), `n` their positions. The statement's
 * tenants are locked first, FOR KEY SHARE, once each: a tenant's deletion waits there for the events
 * written here to commit (events have no foreign key to tenants; the deletion's trigger then deletes
 * them), before its cascade takes the contacts this statement locks (the two could deadlock). That
 * lock does not hold an archive back: a trigger racing an archive may still be accepted, and fan-out
 * then skips it. Contacts are upserted in (tenant, external_id) order, so concurrent
 * statements lock contact rows in the same order and cannot deadlock; a recipient named by several
 * triggers of a batch is upserted once, with the fields of the one trigger that gives any (the
 * batcher never puts two such triggers for one contact into one statement).
 */
function triggersSql(jobsCte: string): string {
  return `
  WITH input AS (
    SELECT * FROM ${jsonRowsSql('$1', TRIGGER_COLUMNS)} AS t
  ), tenant_rows AS MATERIALIZED (
    SELECT id, archived_at FROM tenants WHERE id IN (SELECT tenant_id FROM input) ORDER BY id FOR KEY SHARE
  ), checked AS (
    SELECT i.n,
           tn.id IS NOT NULL AS tenant_found,
           tn.archived_at IS NOT NULL AS archived,
           nt.key IS NOT NULL AS type_found,
           (i.brand IS NULL OR EXISTS (SELECT 1 FROM brands b WHERE b.tenant_id = i.tenant_id AND b.key = i.brand)) AS brand_found,
           ${missingVariablesSql('nt', 'i.names')} AS missing,
           -- How many of its events may share a delivery job (delivery/stages/plan.ts).
           ${eventsPerJobSql('nt', 'i.channels')} AS events_per_job
      FROM input i
      LEFT JOIN tenant_rows tn ON tn.id = i.tenant_id
      LEFT JOIN notification_types nt ON nt.tenant_id = i.tenant_id AND nt.key = i.type AND nt.deleted_at IS NULL
  ), accepted AS (
    SELECT i.* FROM input i JOIN checked c ON c.n = i.n
     WHERE c.tenant_found AND NOT c.archived AND c.type_found AND c.brand_found AND cardinality(c.missing) = 0
  ), wanted AS MATERIALIZED (
    SELECT DISTINCT ON (a.tenant_id, c.external_id) a.tenant_id, c.id, c.external_id, c.email, c.phone, c.name, c.language, c.properties,
           (c.email, c.phone, c.name, c.language, c.properties) IS NULL AS bare
      FROM accepted a CROSS JOIN LATERAL ${jsonRowsSql('a.contacts', CONTACT_INPUT_COLUMNS)} AS c
     ORDER BY a.tenant_id, c.external_id, (c.email, c.phone, c.name, c.language, c.properties) IS NULL
  ), existing AS MATERIALIZED (
    -- A recipient named by external id alone that is a contact already is only locked: rewriting its
    -- row would change nothing but cost a new row version, index entries and WAL. The lock holds a
    -- deletion of the contact back until its events are committed (events have no foreign key to
    -- contacts; the deletion's trigger then clears them). A contact deleted meanwhile is skipped
    -- here, and created below.
    -- One index lookup per recipient, locked in the recipients' order: the planner takes the JSON
    -- input for 100 rows, and would join it to contacts by hashing a scan of the whole table, every
    -- statement, for tenants of up to tens of thousands of contacts.
    SELECT c.id, c.tenant_id, c.external_id
      FROM (SELECT tenant_id, external_id FROM wanted WHERE bare ORDER BY tenant_id, external_id) AS w
     CROSS JOIN LATERAL (
       SELECT c.id, c.tenant_id, c.external_id FROM contacts c
        WHERE c.tenant_id = w.tenant_id AND c.external_id = w.external_id
          FOR KEY SHARE
     ) AS c
  ), upserted AS (
    ${contactUpsertSql(`(
      SELECT w.tenant_id, w.id, w.external_id, w.email, w.phone, w.name, w.language, w.properties FROM wanted w
       WHERE NOT (w.bare AND EXISTS (SELECT 1 FROM existing x WHERE x.tenant_id = w.tenant_id AND x.external_id = w.external_id))
       ORDER BY w.tenant_id, w.external_id
    )`)}
  ), contact_rows AS (
    SELECT id, tenant_id, external_id FROM existing
    UNION ALL
    SELECT id, tenant_id, external_id FROM upserted
  ), recipients AS MATERIALIZED (
    -- Materialized: inlined, the planner re-expanded every trigger's events once per contact row.
    SELECT a.n, x.n AS k, a.tenant_id, x.id, x.external_id, x.ciphertext
      FROM accepted a CROSS JOIN LATERAL ${jsonRowsSql('a.events', EVENT_COLUMNS)} AS x
  ), inserted AS (
    INSERT INTO events (id, tenant_id, type_key, contact_id, external_id, brand_key, channels, variables, secret_variables_ciphertext, secret_keys,
                        send_at, cancellation_key, status)
    SELECT r.id, r.tenant_id, a.type, u.id, u.external_id, a.brand, a.channels, a.variables, r.ciphertext, a.secret_keys,
           a.send_at, a.cancellation_key, CASE WHEN a.send_at IS NULL THEN 'queued' ELSE 'scheduled' END
      FROM recipients r
      JOIN accepted a ON a.n = r.n
      JOIN contact_rows u ON u.tenant_id = r.tenant_id AND u.external_id = r.external_id
     ORDER BY r.n, r.k
    RETURNING id, tenant_id
  ), to_enqueue AS (
    SELECT i.id, i.tenant_id, c.events_per_job, to_char(a.send_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS start_after
      FROM inserted i JOIN recipients r ON r.id = i.id JOIN checked c ON c.n = r.n JOIN accepted a ON a.n = r.n
  ), ${jobsCte}, contact_ids AS (
    SELECT r.n, json_object_agg(r.external_id, u.id) AS contact_ids
      FROM recipients r JOIN contact_rows u ON u.tenant_id = r.tenant_id AND u.external_id = r.external_id
     GROUP BY r.n
  )
  SELECT c.tenant_found, c.archived, c.type_found, c.brand_found, c.missing, EXISTS (SELECT 1 FROM accepted a WHERE a.n = c.n) AS accepted, coalesce(ci.contact_ids, '{}') AS contact_ids,
         (SELECT count(*) FROM inserted)::int AS inserted, (SELECT coalesce(sum(cardinality(je.event_ids)), 0) FROM delivery_job_events je JOIN delivery_jobs j ON j.id = je.id)::int AS enqueued
    FROM checked c LEFT JOIN contact_ids ci ON ci.n = c.n
   ORDER BY c.n`;
}

/**
 * Runs the triggers in one statement (inside `em`'s transaction if it has one); one outcome per
 * trigger, in order.
 */
export async function writeTriggers(
  em: EntityManager,
  boss: PgBoss,
  triggers: TriggerInput[],
): Promise<TriggerOutcome[]> {
  const statement = await triggerStatement(boss);
  const rows = await query<TriggerOutcome & { inserted: number; enqueued: number }>(em, statement, [
    jsonRowsParameter(
      triggers.map((t) => ({
        ...t,
        contacts: jsonRows(t.contacts, CONTACT_INPUT_COLUMNS),
        events: jsonRows(t.events, EVENT_COLUMNS),
      })),
      TRIGGER_COLUMNS,
    ),
  ]);
  const expected = triggers.reduce((sum, t, n) => sum + (rows[n]?.accepted ? t.events.length : 0), 0);
  // Unreachable unless the statement is broken; if so, better a 500 than a lost notification.
  if (rows.length !== triggers.length || rows[0]!.inserted !== expected || rows[0]!.enqueued !== expected) {
    throw new Error(
      `trigger statement answered ${rows.length} rows for ${triggers.length} triggers, ${rows[0]?.inserted} events and ${rows[0]?.enqueued} enqueued for ${expected}`,
    );
  }
  return rows.map(({ inserted: _inserted, enqueued: _enqueued, ...outcome }) => outcome);
}

interface Pending {
  trigger: TriggerInput;
  resolve: (outcome: TriggerOutcome) => void;
  reject: (error: unknown) => void;
}

/** A statement's share of the queue: up to this many triggers or events. */
const MAX_BATCH_TRIGGERS = 64;
const MAX_BATCH_EVENTS = 200;
/**
 * A trigger for this many recipients or more skips the queue and runs alone, at once: its own rows
 * outweigh the statement's fixed cost, and such triggers write faster side by side on PostgreSQL's
 * cores than queued behind each other.
 */
const ALONE_FROM_EVENTS = 20;

/**
 * How long a statement may be in flight before the triggers queued behind it may take another lane:
 * far longer than a statement takes, even on a busy machine, so that only one held up (waiting for a
 * row lock) opens one.
 */
const HELD_UP_AFTER_MS = 50;

/**
 * Writes triggers, batching those that arrive while a statement is in flight. Each lane runs one
 * statement at a time; a trigger that finds no lane running starts one at once, alone. A second lane
 * (up to `lanes`) starts only while every running lane's statement is held up (in flight for longer
 * than `heldUpAfterMs`): side by side, lanes would each write smaller batches, and a statement's fixed
 * cost, not its rows, is most of what a small trigger costs the database.
 */
export class TriggerBatcher {
  private readonly queue: Pending[] = [];
  private running = 0;
  /** Running lanes whose statement is held up. */
  private heldUp = 0;
  private readonly write: (triggers: TriggerInput[]) => Promise<TriggerOutcome[]>;
  private readonly lanes: number;
  private readonly afterCommit: () => void;
  private readonly heldUpAfterMs: number;

  /** `afterCommit` runs once per committed statement (it wakes the delivery workers). */
  constructor(
    write: (triggers: TriggerInput[]) => Promise<TriggerOutcome[]>,
    lanes: number,
    afterCommit: () => void,
    heldUpAfterMs = HELD_UP_AFTER_MS,
  ) {
    this.write = write;
    this.lanes = lanes;
    this.afterCommit = afterCommit;
    this.heldUpAfterMs = heldUpAfterMs;
  }

  submit(trigger: TriggerInput): Promise<TriggerOutcome> {
    return new Promise((resolve, reject) => {
      if (trigger.events.length >= ALONE_FROM_EVENTS) return void this.writeAlone({ trigger, resolve, reject });
      this.queue.push({ trigger, resolve, reject });
      this.startLaneIfDue();
    });
  }

  /** Starts a lane for the queue when none is running, or when every running one is held up. */
  private startLaneIfDue(): void {
    if (this.queue.length === 0 || this.running >= this.lanes || this.running > this.heldUp) return;
    this.running++;
    void this.lane();
  }

  private async lane(): Promise<void> {
    // A lane leaves the queue to another running lane whose statement is not held up: one lane again,
    // once the statement that held up the other has finished.
    for (let batch = this.nextBatch(); batch.length > 0; batch = this.nextBatch()) {
      let outcomes: TriggerOutcome[];
      let heldUp = false;
      const watch = setTimeout(() => {
        heldUp = true;
        this.heldUp++;
        this.startLaneIfDue();
      }, this.heldUpAfterMs);
      watch.unref();
      try {
        outcomes = await this.write(batch.map((p) => p.trigger));
      } catch (error) {
        if (batch.length === 1) batch[0]!.reject(error);
        // Nothing of the batch was written: run each trigger alone, so that whatever failed fails
        // only the trigger that caused it.
        else for (const p of batch) await this.writeAlone(p);
        continue;
      } finally {
        clearTimeout(watch);
        if (heldUp) this.heldUp--;
      }
      // Outside the try: what follows a committed statement must never write its triggers again.
      // Answered after the loop has sent the next statement: each answer's continuation writes an HTTP
      // response, and queued ahead of the next statement's way to its connection, the batch's
      // responses held that statement back by about a millisecond.
      setImmediate(() => {
        batch.forEach((p, i) => p.resolve(outcomes[i]!));
        this.afterCommit();
      });
    }
    this.running--;
  }

  /** The lane's next batch; none when another running lane is not held up (it takes the queue). */
  private nextBatch(): Pending[] {
    return this.running - 1 > this.heldUp ? [] : this.takeBatch();
  }

  private async writeAlone(p: Pending): Promise<void> {
    let outcome: TriggerOutcome;
    try {
      [outcome] = (await this.write([p.trigger])) as [TriggerOutcome];
    } catch (error) {
      return p.reject(error);
    }
    p.resolve(outcome);
    this.afterCommit();
  }

  /**
   * The next statement's triggers, in arrival order, up to the limits. A statement writes each contact
   * once, so a trigger that gives fields for a contact an earlier trigger of the batch gives fields
   * for waits for a later statement, and so do the triggers behind it that give fields for the same
   * contacts (triggers that only name a contact never wait).
   */
  private takeBatch(): Pending[] {
    const batch: Pending[] = [];
    const kept: Pending[] = [];
    const withFields = new Set<string>();
    const deferred = new Set<string>();
    let events = 0;
    for (const p of this.queue) {
      const { trigger } = p;
      const fielded = trigger.contacts
        .filter((c) => !isBareContact(c))
        .map((c) => `${trigger.tenant_id}/${c.external_id}`);
      const full =
        batch.length >= MAX_BATCH_TRIGGERS || (batch.length > 0 && events + trigger.events.length > MAX_BATCH_EVENTS);
      if (full || fielded.some((key) => withFields.has(key) || deferred.has(key))) {
        kept.push(p);
        for (const key of fielded) deferred.add(key);
        continue;
      }
      batch.push(p);
      events += trigger.events.length;
      for (const key of fielded) withFields.add(key);
    }
    this.queue.splice(0, this.queue.length, ...kept);
    return batch;
  }
}

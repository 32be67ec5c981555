// A workflow run: the steps of the event's workflow from the first one still to run, inside the round's
// transaction (run-event.ts), each step's progress stored on the event with what the step did. A step
// either finishes at once (a channel step's local deliveries, a passed throttle, a due delay) and the
// next one follows, or ends the round: a channel step with remote deliveries (sent after the commit,
// then the next round goes on), a wait (a delay, a digest window, quiet hours: the next run is a job
// due then), or the end of the event (throttled, digested into another event, a failed step).
import { toIsoTimestamp } from '../base/timestamps.ts';
import { execute, query, queryOne } from '../base/db/sql.ts';
import type { StepState, WorkflowStep } from '../schemas/workflows.ts';
import { evaluateCondition, renderString } from '../base/template-engine.ts';
import { renderContext } from '../channels/resolve.ts';
import type { DeliveryRow } from '../channels/types.ts';
import { countSkipped } from './metrics.ts';
import type { HeldEvent } from './schedule.ts';
import type { LoadedEvent } from './stages/load.ts';
import { planEvent } from './stages/plan.ts';
import { contactContext } from '../channels/render-delivery.ts';
import { isLocalChannel } from '../channels/registry.ts';
import { storePlan } from './stages/store.ts';
import { quietHoldUntil, settleLocal, type RoundContext } from './runs/round.ts';

export interface WorkflowAdvance {
  remote: DeliveryRow[];
  again: boolean;
  held: HeldEvent[];
  /** The event joined another's digest: final, its status set here (no roll-up). */
  digestedInto: string | null;
}

const DIGEST_OF = `SELECT count, events FROM digests WHERE opener_event_id = $1`;
const STORE_STEPS = `UPDATE events SET steps = $2::jsonb, updated_at = now() WHERE id = $1`;
const STORE_STEPS_DIGESTED = `UPDATE events
    SET steps = $2::jsonb, status = 'digested', digest_event_id = $3, secret_variables_ciphertext = NULL,
        updated_at = now()
  WHERE id = $1`;

/**
 * The state of an event's inbox item, found through the event's inbox delivery (by index, both):
 * inbox items have no index on their event (exported for the tests).
 */
export const EVENT_INBOX_ITEM = `SELECT read_at IS NOT NULL AS read, seen_at IS NOT NULL AS seen, archived_at IS NOT NULL AS archived
   FROM inbox_items
  WHERE delivery_id = (SELECT id FROM deliveries WHERE event_id = $1 AND channel = 'inbox' AND destination = '')`;

const LOCK_KEY = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`;

/** A throttle step's statements; $1-$4 are the (tenant, recipient, type, key) it counts for. */
const PRUNE_THROTTLE_HITS = `DELETE FROM throttle_hits
  WHERE tenant_id = $1 AND external_id = $2 AND type_key = $3 AND key = $4 AND at <= to_timestamp($5 / 1000.0)`;
const COUNT_THROTTLE_HITS = `SELECT count(*)::int AS n FROM throttle_hits
  WHERE tenant_id = $1 AND external_id = $2 AND type_key = $3 AND key = $4`;
const INSERT_THROTTLE_HIT = `INSERT INTO throttle_hits (tenant_id, external_id, type_key, key, event_id, at)
  VALUES ($1, $2, $3, $4, $5, to_timestamp($6 / 1000.0))`;

/** A digest step's statements; $1-$4 are the (tenant, recipient, type, key) it collects for. */
const CLOSE_OWN_DIGEST = `UPDATE digests SET closed_at = coalesce(closed_at, to_timestamp($2 / 1000.0))
  WHERE opener_event_id = $1`;
const FIND_OPEN_DIGEST = `SELECT opener_event_id, window_end > to_timestamp($5 / 1000.0) AS open
  FROM digests WHERE tenant_id = $1 AND external_id = $2 AND type_key = $3 AND key = $4 AND closed_at IS NULL`;
const ADD_TO_DIGEST = `UPDATE digests
    SET count = count + 1,
        events = CASE WHEN jsonb_array_length(events) < max_events THEN events || jsonb_build_array($2::jsonb)
                      ELSE events END
  WHERE opener_event_id = $1`;
const CLOSE_EXPIRED_DIGEST = `UPDATE digests SET closed_at = to_timestamp($2 / 1000.0) WHERE opener_event_id = $1`;
const OPEN_NEW_DIGEST = `INSERT INTO digests
    (opener_event_id, tenant_id, external_id, type_key, key, window_end, max_events, count, events)
  VALUES ($5, $1, $2, $3, $4, to_timestamp($6 / 1000.0), $7, 1, jsonb_build_array($8::jsonb))
  ON CONFLICT (opener_event_id) DO NOTHING`;

/** The digest an event opened and whose window has closed, as templates see it; null if none. */
export async function digestOf(
  tx: RoundContext['tx'],
  event: LoadedEvent,
): Promise<{ count: number; events: unknown[] } | null> {
  if (!event.steps?.some((s) => s.kind === 'digest' && s.status === 'done')) return null;
  const row = await queryOne<{ count: number; events: unknown[] }>(tx, DIGEST_OF, [event.id]);
  return row ?? null;
}

export function initialSteps(steps: WorkflowStep[]): StepState[] {
  return steps.map((definition, index) => ({
    index,
    kind: definition.kind,
    status: 'pending',
    run_at: null,
    reason: null,
    definition,
  }));
}

export async function advanceWorkflow(context: RoundContext): Promise<WorkflowAdvance> {
  const { event } = context;
  const steps = event.steps ?? initialSteps(event.workflow!.steps);
  const result: WorkflowAdvance = { remote: [], again: false, held: [], digestedInto: null };
  let ended = false;
  for (const step of steps) {
    if (step.status !== 'pending' && step.status !== 'waiting') continue;
    if (ended) {
      step.status = 'canceled';
      continue;
    }
    const outcome = await runStep(context, step);
    if (typeof outcome === 'object' && 'digestedInto' in outcome) {
      result.digestedInto = outcome.digestedInto;
      ended = true;
      continue;
    }
    if (outcome === 'next') continue;
    if (outcome === 'end') {
      ended = true;
      continue;
    }
    if ('hold' in outcome)
      result.held.push({ eventId: event.id, runAt: outcome.hold, bulk: event.broadcast_id !== null });
    else {
      result.remote = outcome.remote;
      result.again = true;
    }
    break;
  }
  await execute(
    context.tx,
    result.digestedInto === null ? STORE_STEPS : STORE_STEPS_DIGESTED,
    result.digestedInto === null
      ? [event.id, JSON.stringify(steps)]
      : [event.id, JSON.stringify(steps), result.digestedInto],
  );
  return result;
}

type StepOutcome = 'next' | 'end' | { hold: number } | { remote: DeliveryRow[] } | { digestedInto: string };

function finish(step: StepState, status: StepState['status'], now: number, reason: string | null = null): void {
  step.status = status;
  step.reason = reason;
  step.run_at = toIsoTimestamp(now);
}

function wait(step: StepState, until: number): StepOutcome {
  step.status = 'waiting';
  step.run_at = toIsoTimestamp(until);
  return { hold: until };
}

/** The step is waiting and not due yet (a duplicate or early job): hold it again. */
function notDue(step: StepState, now: number): number | null {
  if (step.status !== 'waiting' || step.run_at === null) return null;
  const at = Date.parse(step.run_at);
  return at > now ? at : null;
}

async function runStep(context: RoundContext, step: StepState): Promise<StepOutcome> {
  const early = notDue(step, context.now);
  if (early !== null) return { hold: early };
  const definition = step.definition;
  switch (definition.kind) {
    case 'channel':
      return channelStep(context, step, definition);
    case 'delay':
      return delayStep(context, step, definition);
    case 'digest':
      return digestStep(context, step, definition);
    case 'throttle':
      return throttleStep(context, step, definition);
  }
}

/** What conditions see: the variables, the contact, the brand's values and this event's inbox item. */
async function conditionContext(context: RoundContext): Promise<Record<string, unknown>> {
  const item = await queryOne<{ read: boolean; seen: boolean; archived: boolean }>(context.tx, EVENT_INBOX_ITEM, [
    context.event.id,
  ]);
  return {
    vars: 'values' in context.variables ? context.variables.values : context.event.variables,
    contact: context.contact ? contactContext(context.contact) : {},
    brand: context.event.brand?.values ?? {},
    inbox: {
      exists: item !== undefined,
      read: item?.read ?? false,
      seen: item?.seen ?? false,
      archived: item?.archived ?? false,
    },
  };
}

async function channelStep(
  context: RoundContext,
  step: StepState,
  definition: Extract<WorkflowStep, { kind: 'channel' }>,
): Promise<StepOutcome> {
  if (definition.if !== undefined) {
    let passed: boolean;
    try {
      passed = evaluateCondition(definition.if, await conditionContext(context));
    } catch (error) {
      finish(step, 'failed', context.now, `condition_error: ${(error as Error).message}`.slice(0, 300));
      return 'next';
    }
    if (!passed) {
      finish(step, 'skipped', context.now, 'condition_false');
      return 'next';
    }
  }
  if (!isLocalChannel(definition.channel)) {
    const quietEnd = quietHoldUntil(context.event, context.now);
    if (quietEnd !== null) {
      step.reason = 'quiet_hours';
      return wait(step, quietEnd);
    }
  }
  const plan = planEvent(context.event, definition.channel);
  countSkipped(context.runtime, context.event, plan);
  const planned = await storePlan(context.tx, context.event, plan);
  const remote = await settleLocal(context, planned);
  // A filtered channel (left out by the trigger, off for the type, opted out, no destination) is one
  // skipped delivery: the step shows its reason.
  const filtered = plan.length > 0 && plan.every((d) => d.status === 'skipped') ? plan[0]!.reason : null;
  finish(step, filtered === null ? 'done' : 'skipped', context.now, filtered);
  return remote.length > 0 ? { remote } : 'next';
}

async function delayStep(
  context: RoundContext,
  step: StepState,
  definition: Extract<WorkflowStep, { kind: 'delay' }>,
): Promise<StepOutcome> {
  if (step.status === 'waiting') {
    finish(step, 'done', context.now);
    return 'next';
  }
  let until: number;
  if (definition.seconds !== undefined) until = context.now + definition.seconds * 1000;
  else {
    const text = renderKey(context, definition.until!);
    until = text === null ? NaN : Date.parse(text);
    if (Number.isNaN(until)) {
      finish(step, 'failed', context.now, 'invalid_until');
      return 'end';
    }
  }
  if (until <= context.now) {
    finish(step, 'done', context.now);
    return 'next';
  }
  return wait(step, until);
}

/** A step's `{{ var }}` rendered against the event's variables, the contact and the brand; null when unfilled. */
function renderKey(context: RoundContext, template: string | undefined): string | null {
  if (template === undefined) return '';
  const vars = 'values' in context.variables ? context.variables.values : context.event.variables;
  try {
    // As templates see them: a contact field the contact does not have leaves its slot unfilled.
    return renderString(
      template,
      renderContext(context.event.brand, vars, context.contact ? contactContext(context.contact) : null),
      'text',
    );
  } catch {
    return null;
  }
}

/** Serialises the events of one (tenant, recipient, type, key) through a digest or throttle step. */
async function lockKey(context: RoundContext, kind: string, key: string): Promise<void> {
  const { event } = context;
  await query(context.tx, LOCK_KEY, [`${kind}/${event.tenant_id}/${event.external_id}/${event.type_key}/${key}`]);
}

async function throttleStep(
  context: RoundContext,
  step: StepState,
  definition: Extract<WorkflowStep, { kind: 'throttle' }>,
): Promise<StepOutcome> {
  const key = renderKey(context, definition.key);
  if (key === null) {
    finish(step, 'failed', context.now, 'unfilled_key');
    return 'end';
  }
  await lockKey(context, 'throttle', key);
  const { event, tx, now } = context;
  const since = now - definition.window_seconds * 1000;
  const params = [event.tenant_id, event.external_id, event.type_key, key];
  await execute(tx, PRUNE_THROTTLE_HITS, [...params, since]);
  const row = await queryOne<{ n: number }>(tx, COUNT_THROTTLE_HITS, params);
  if ((row?.n ?? 0) >= definition.limit) {
    finish(step, 'skipped', now, 'throttled');
    return 'end';
  }
  await execute(tx, INSERT_THROTTLE_HIT, [...params, event.id, now]);
  finish(step, 'done', now);
  return 'next';
}

async function digestStep(
  context: RoundContext,
  step: StepState,
  definition: Extract<WorkflowStep, { kind: 'digest' }>,
): Promise<StepOutcome> {
  const { event, tx, now } = context;
  if (step.status === 'waiting') {
    // The window has ended: close it (if a later event has not already) and go on with the summary.
    await execute(tx, CLOSE_OWN_DIGEST, [event.id, now]);
    finish(step, 'done', now);
    const digest = await digestOf(tx, { ...event, steps: [step] });
    if (digest && 'values' in context.variables)
      context.variables = { values: { ...context.variables.values, digest } };
    return 'next';
  }
  const key = renderKey(context, definition.key);
  if (key === null) {
    finish(step, 'failed', now, 'unfilled_key');
    return 'end';
  }
  await lockKey(context, 'digest', key);
  const entry = JSON.stringify({ event_id: event.id, variables: event.variables, created_at: toIsoTimestamp(now) });
  const scope = [event.tenant_id, event.external_id, event.type_key, key];
  const open = await queryOne<{ opener_event_id: string; open: boolean }>(tx, FIND_OPEN_DIGEST, [...scope, now]);
  if (open?.open && open.opener_event_id !== event.id) {
    await execute(tx, ADD_TO_DIGEST, [open.opener_event_id, entry]);
    finish(step, 'done', now, 'digested');
    return { digestedInto: open.opener_event_id };
  }
  if (open) {
    // Its window is over but its opener has not run yet: it keeps what it has; a new window opens.
    await execute(tx, CLOSE_EXPIRED_DIGEST, [open.opener_event_id, now]);
  }
  const windowEnd = now + definition.window_seconds * 1000;
  await execute(tx, OPEN_NEW_DIGEST, [...scope, event.id, windowEnd, definition.max_events, entry]);
  return wait(step, windowEnd);
}

// The send stage: a delivery through its channel, its outcome recorded with it. A local delivery (the
// inbox: a database write) runs under a savepoint of the event's transaction; a remote one (email,
// push) runs outside it, under a row lock (SKIP LOCKED: a second worker holding the same job never
// sends it twice), and only while it is still pending. The per-event run sends its remote deliveries
// one by one, each in a transaction of its own; the batched remote run claims a whole batch's in one
// statement, sends them side by side, and records their outcomes in one statement, in one transaction.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query, queryOne } from '../../base/db/sql.ts';
import { planEachCall } from '../../base/db/prepared.ts';
import type { ContactRow } from '../../base/db/contacts.ts';
import { TemplateError, UnfilledSlotError } from '../../base/template-engine.ts';
import { channelRegistry } from '../../channels/registry.ts';
import type {
  DeliveryOutcome,
  DeliveryRow,
  EventForDelivery,
  RunLookups,
  ChannelContext,
} from '../../channels/types.ts';
import type { TemplateCache } from '../../channels/render-delivery.ts';
import { recordOutcome, recordOutcomes } from './store.ts';
import { withinPauseBudget } from '../pauses.ts';

export interface SendInput {
  runtime: ChannelContext;
  delivery: DeliveryRow;
  event: EventForDelivery;
  contact: ContactRow;
  renderVariables: Record<string, unknown>;
  templates: TemplateCache;
  finalAttempt: boolean;
  lookups?: RunLookups;
}

const LOCK_PENDING = `SELECT id FROM deliveries WHERE id = $1 AND status = 'pending' FOR UPDATE SKIP LOCKED`;
const CLAIM_PENDING = planEachCall(
  `SELECT id FROM deliveries WHERE id = ANY($1::uuid[]) AND status = 'pending' ORDER BY id FOR UPDATE SKIP LOCKED`,
);

/** Delivers a local delivery under a savepoint of the event's transaction `tx`. */
export async function sendLocal(tx: EntityManager, input: SendInput): Promise<DeliveryOutcome> {
  try {
    return await tx.transactional(async (savepoint) => {
      const outcome = await attempt(savepoint, input);
      await recordOutcome(savepoint, input.delivery, outcome, input.finalAttempt);
      return outcome;
    });
  } catch (error) {
    // Rolled back to the savepoint: count the attempt, keep the error, retry later.
    const outcome = unexpectedFailure(input, error);
    await recordOutcome(tx, input.delivery, outcome, input.finalAttempt);
    return outcome;
  }
}

/** Sends a remote delivery under its own row lock; null when it is final already or another worker holds it. */
export async function sendRemote(em: EntityManager, input: SendInput): Promise<DeliveryOutcome | null> {
  try {
    return await em.transactional(async (tx) => {
      const locked = await queryOne(tx, LOCK_PENDING, [input.delivery.id]);
      if (!locked) return null;
      const outcome = await attempt(tx, input);
      await recordOutcome(tx, input.delivery, outcome, input.finalAttempt);
      return outcome;
    });
  } catch (error) {
    const outcome = unexpectedFailure(input, error);
    await recordOutcome(em, input.delivery, outcome, input.finalAttempt);
    return outcome;
  }
}

/**
 * Sends remote deliveries side by side under their row locks, taken together (SKIP LOCKED) and held
 * until their outcomes are recorded together; the outcome of each, in order, or null for one final
 * already or held by another worker. The channels' own statements (destinations, transports,
 * suppressions) run outside that transaction, each on a connection of its own, so one delivery's
 * statement never waits for another's. Throws only when the claim or the record fails: then nothing
 * of the batch is recorded, and its deliveries, still pending, are for the job's retry.
 */
export async function sendRemoteBatch(
  runtime: ChannelContext,
  inputs: SendInput[],
): Promise<Array<DeliveryOutcome | null>> {
  if (inputs.length === 0) return [];
  return runtime.orm.em.fork().transactional(async (tx) => {
    const claimed = await query<{ id: string }>(tx, CLAIM_PENDING, [inputs.map((i) => i.delivery.id)]);
    const mine = new Set(claimed.map((c) => c.id));
    const sent = await sendSideBySide(
      runtime,
      inputs.filter((input) => mine.has(input.delivery.id)),
    );
    let next = 0;
    const outcomes = inputs.map((input) => (mine.has(input.delivery.id) ? sent[next++]! : null));
    await recordOutcomes(
      tx,
      inputs.flatMap((input, i) =>
        outcomes[i] ? [{ delivery: input.delivery, outcome: outcomes[i], finalAttempt: input.finalAttempt }] : [],
      ),
    );
    return outcomes;
  });
}

/**
 * Sends remote deliveries side by side, each through its channel, and answers their outcomes in
 * order; a delivery that throws is a retryable failure. It records nothing: the caller holds what
 * keeps a second worker from sending them too (the deliveries' row locks, or their events' before any
 * delivery is stored), and records the outcomes. The channels' statements run on connections of their own.
 */
export async function sendSideBySide(runtime: ChannelContext, inputs: SendInput[]): Promise<DeliveryOutcome[]> {
  // One fork for all of them: outside the caller's transaction, each statement takes a pooled
  // connection of its own (a transaction a channel opens forks again). Herald keeps no entities in a
  // fork, and a fork per send was a measurable share of a send's allocations.
  const em = runtime.orm.em.fork();
  await preloadLookups(runtime, em, inputs);
  return Promise.all(
    inputs.map(async (input) => {
      try {
        return await attempt(em, input);
      } catch (error) {
        return unexpectedFailure(input, error);
      }
    }),
  );
}

/**
 * What the channels look up per delivery, for the whole batch, a statement per channel. A failed
 * preload is left alone: each delivery then looks up its own.
 */
async function preloadLookups(runtime: ChannelContext, em: EntityManager, inputs: SendInput[]): Promise<void> {
  // The batched remote run gives all of a batch's deliveries one lookups map.
  const byChannel = new Map<DeliveryRow['channel'], SendInput[]>();
  for (const input of inputs) {
    if (!input.lookups) continue;
    const group = byChannel.get(input.delivery.channel);
    if (group) group.push(input);
    else byChannel.set(input.delivery.channel, [input]);
  }
  await Promise.all(
    [...byChannel].map(async ([channel, group]) => {
      const sender = channelRegistry.get(channel)!;
      if (!sender.preload) return;
      try {
        await sender.preload(em, group, group[0]!.lookups!);
      } catch (error) {
        runtime.logger.warn('delivery lookups could not be preloaded', {
          channel,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }),
  );
}

async function attempt(em: EntityManager, input: SendInput): Promise<DeliveryOutcome> {
  const sender = channelRegistry.get(input.delivery.channel)!;
  try {
    return withinPauseBudget(await sender.deliver({ ...input, em }), input.delivery);
  } catch (error) {
    if (!(error instanceof UnfilledSlotError || error instanceof TemplateError)) throw error;
    // A template problem does not heal by retrying: final failure, naming the slot.
    return { status: 'failed', error: error.message, retryable: false };
  }
}

function unexpectedFailure(input: SendInput, error: unknown): DeliveryOutcome {
  const message = error instanceof Error ? error.message : String(error);
  input.runtime.logger.warn('delivery attempt failed', {
    event_id: input.event.id,
    delivery_id: input.delivery.id,
    channel: input.delivery.channel,
    error: message,
  });
  return { status: 'failed', error: message, retryable: true };
}

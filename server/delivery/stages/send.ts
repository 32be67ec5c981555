// The send stage of the per-event run: one delivery through its channel, its outcome recorded with it.
// A local delivery (the inbox: a database write) runs under a savepoint of the event's transaction; a
// remote one (email, push) runs outside it, under its own row lock (SKIP LOCKED: a second worker holding
// the same job never sends it twice), and only while it is still pending.
import type { EntityManager } from '@mikro-orm/postgresql';
import { queryOne } from '../../db/sql.ts';
import type { Runtime } from '../../runtime.ts';
import type { ContactRow } from '../../db/contacts.ts';
import { TemplateError, UnfilledSlotError } from '../../templates/engine.ts';
import { channelRegistry } from '../channels/index.ts';
import type { DeliveryOutcome, DeliveryRow, EventForDelivery } from '../channels/types.ts';
import type { TemplateCache } from './render.ts';
import { recordOutcome } from './store.ts';

export interface SendInput {
  runtime: Runtime;
  delivery: DeliveryRow;
  event: EventForDelivery;
  contact: ContactRow;
  renderVariables: Record<string, unknown>;
  templates: TemplateCache;
  finalAttempt: boolean;
}

/** Delivers a local delivery under a savepoint of the event's transaction `tx`. */
export async function sendLocal(tx: EntityManager, input: SendInput): Promise<DeliveryOutcome> {
  try {
    return await tx.transactional(async (savepoint) => {
      const outcome = await attempt(savepoint, input);
      await recordOutcome(savepoint, input.delivery.id, outcome, input.finalAttempt);
      return outcome;
    });
  } catch (error) {
    // Rolled back to the savepoint: count the attempt, keep the error, retry later.
    const outcome = unexpectedFailure(input, error);
    await recordOutcome(tx, input.delivery.id, outcome, input.finalAttempt);
    return outcome;
  }
}

/** Sends a remote delivery under its own row lock; null when it is final already or another worker holds it. */
export async function sendRemote(em: EntityManager, input: SendInput): Promise<DeliveryOutcome | null> {
  try {
    return await em.transactional(async (tx) => {
      const locked = await queryOne(tx, `SELECT id FROM deliveries WHERE id = $1 AND status = 'pending' FOR UPDATE SKIP LOCKED`, [input.delivery.id]);
      if (!locked) return null;
      const outcome = await attempt(tx, input);
      await recordOutcome(tx, input.delivery.id, outcome, input.finalAttempt);
      return outcome;
    });
  } catch (error) {
    const outcome = unexpectedFailure(input, error);
    await recordOutcome(em, input.delivery.id, outcome, input.finalAttempt);
    return outcome;
  }
}

async function attempt(em: EntityManager, input: SendInput): Promise<DeliveryOutcome> {
  const sender = channelRegistry.get(input.delivery.channel)!;
  try {
    return await sender.deliver({ ...input, em });
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

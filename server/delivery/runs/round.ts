// What a round of the per-event run (run-event.ts) works with, and what both the default run and a
// workflow's channel steps do with the deliveries they plan.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ContactRow } from '../../base/db/contacts.ts';
import { channelRegistry } from '../../channels/registry.ts';
import type { DeliveryOutcome, DeliveryRow, ChannelContext } from '../../channels/types.ts';
import { countOutcome } from '../metrics.ts';
import { quietHoursEnd } from '../quiet-hours.ts';
import type { LoadedEvent } from '../stages/load.ts';
import type { TemplateCache } from '../../channels/render-delivery.ts';
import { sendLocal } from '../stages/send.ts';
import { recordOutcome } from '../stages/store.ts';

/** What a round works with. */
export interface RoundContext {
  runtime: ChannelContext;
  tx: EntityManager;
  event: LoadedEvent;
  contact: ContactRow | null;
  /** Variables to render with (secret ones included), or why they cannot be read. */
  variables: { values: Record<string, unknown> } | { error: string };
  templates: TemplateCache;
  finalAttempt: boolean;
  now: number;
  retryErrors: string[];
}

export function noteRetry(
  errors: string[],
  delivery: DeliveryRow,
  outcome: DeliveryOutcome | null,
  finalAttempt: boolean,
): void {
  if (outcome?.status === 'failed' && outcome.retryable && !finalAttempt && outcome.retryAt === undefined)
    errors.push(`${delivery.channel}: ${outcome.error}`);
}

/**
 * Delivers the local deliveries among `deliveries` now (under savepoints of the round's transaction)
 * and returns the remote ones, to send after the commit. Without a contact or readable variables,
 * nothing can be delivered: each is recorded as such.
 */
export async function settleLocal(context: RoundContext, deliveries: DeliveryRow[]): Promise<DeliveryRow[]> {
  const { runtime, tx, event, contact, variables } = context;
  const remote: DeliveryRow[] = [];
  for (const delivery of deliveries) {
    const sender = channelRegistry.get(delivery.channel);
    if (!sender) continue; // unreachable: only registered channels are planned
    if (!contact || 'error' in variables) {
      const outcome: DeliveryOutcome =
        'error' in variables
          ? { status: 'failed', error: variables.error, retryable: false }
          : { status: 'skipped', reason: 'no_destination' };
      await recordOutcome(tx, delivery, outcome, context.finalAttempt);
      countOutcome(runtime, event, delivery.channel, outcome, context.finalAttempt);
    } else if (sender.local) {
      const outcome = await sendLocal(tx, {
        runtime,
        delivery,
        event,
        contact,
        renderVariables: variables.values,
        templates: context.templates,
        finalAttempt: context.finalAttempt,
      });
      noteRetry(context.retryErrors, delivery, outcome, context.finalAttempt);
      countOutcome(runtime, event, delivery.channel, outcome, context.finalAttempt);
    } else {
      remote.push(delivery);
    }
  }
  return remote;
}

/** When remote channels may reach the contact again, if its quiet hours hold them now; null: send now. */
export function quietHoldUntil(event: LoadedEvent, now: number): number | null {
  const contact = event.contact;
  if (event.bypass_quiet_hours || !contact?.timezone || !contact.quiet_hours) return null;
  return quietHoursEnd(now, contact.timezone, contact.quiet_hours);
}

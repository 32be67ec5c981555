// What the delivery runs report to the process's metrics: each delivery once, when it reaches a final
// status, with the time since its event was triggered. In memory only (server/base/metrics/registry.ts).
import { recordDeliveries, recordProviderAnswers } from '../base/metrics/registry.ts';
import type { ChannelContext, DeliveryOutcome } from '../channels/types.ts';
import type { PlannedDelivery } from './stages/plan.ts';
import { staysPending } from './pauses.ts';

function secondsSince(createdAt: string | Date, now: number): number {
  return Math.max(0, (now - new Date(createdAt).getTime()) / 1000);
}

/** A delivery's outcome, unless it stays pending (a failure to retry); the providers it asked, always. */
export function countOutcome(
  runtime: ChannelContext,
  event: { created_at: string | Date },
  channel: string,
  outcome: DeliveryOutcome | null,
  finalAttempt: boolean,
): void {
  if (outcome && outcome.status !== 'skipped' && outcome.providerAttempts)
    recordProviderAnswers(runtime, channel, outcome.providerAttempts);
  if (!outcome || staysPending(outcome, finalAttempt)) return;
  recordDeliveries(runtime, channel, outcome.status, secondsSince(event.created_at, Date.now()));
}

/** The deliveries a plan skipped outright (no attempt). */
export function countSkipped(
  runtime: ChannelContext,
  event: { created_at: string | Date },
  plan: PlannedDelivery[],
): void {
  const now = Date.now();
  for (const d of plan)
    if (d.status === 'skipped') recordDeliveries(runtime, d.channel, 'skipped', secondsSince(event.created_at, now));
}

/** Deliveries stored with their final status in one go (the batched run). */
export function countStored(
  runtime: ChannelContext,
  stored: Array<{ channel: string; status: string; created_at: string | Date }>,
): void {
  const now = Date.now();
  for (const d of stored) recordDeliveries(runtime, d.channel, d.status, secondsSince(d.created_at, now));
}

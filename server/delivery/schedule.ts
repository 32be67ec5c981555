// Runs of events held for later (a scheduled send, a delay, a digest window, quiet hours): a delivery
// job per run, inserted in the transaction that decides the wait, due at its time (pg-boss startAfter).
// Waiting costs nothing per event: no row is polled. Workers fetch due jobs when woken or at their
// polling interval; so that a run starts on time rather than at the next poll, the process that holds
// an event back also sets a timer that wakes the workers when it is due (one timer per due second,
// whatever the number of events); after a restart, the polling stands in for lost timers.
import type { EntityManager } from '@mikro-orm/postgresql';
import { bossDb } from '../base/db/sql.ts';
import type { Logger } from '../base/logger.ts';
import type { PgBoss } from '../base/queue.ts';
import { newId } from '../base/ids.ts';
import { wakeDeliveryWorkers } from './enqueue.ts';
import { BULK_JOB_PRIORITY, DELIVER_EVENT_QUEUE, EVENTS_PER_DELIVERY_JOB, type DeliverEventJob } from './queues.ts';

export interface HeldEvent {
  eventId: string;
  /** When its next run is due (epoch ms). */
  runAt: number;
  /** A broadcast's event: its runs are bulk jobs, as its first was (enqueue.ts). */
  bulk: boolean;
}

/** Runs due within this many milliseconds of each other (a broadcast's apart from a trigger's) share a job, which starts at the latest of them. */
const SHARED_RUN_MS = 100;

/**
 * Enqueues the next runs of held events inside `tx`, up to EVENTS_PER_DELIVERY_JOB events a job. A
 * run that finds its event not due yet holds it again, so a job never runs an event early.
 */
export async function scheduleRuns(tx: EntityManager, boss: PgBoss, held: HeldEvent[]): Promise<void> {
  if (held.length === 0) return;
  const bySlot = new Map<string, HeldEvent[]>();
  for (const h of held) {
    const slot = `${Math.ceil(h.runAt / SHARED_RUN_MS) * SHARED_RUN_MS}:${h.bulk}`;
    bySlot.set(slot, [...(bySlot.get(slot) ?? []), h]);
  }
  const jobs: Array<{ id: string; data: DeliverEventJob; startAfter: Date; priority?: number }> = [];
  for (const group of bySlot.values()) {
    const bulk = group[0]!.bulk;
    for (let i = 0; i < group.length; i += EVENTS_PER_DELIVERY_JOB) {
      const chunk = group.slice(i, i + EVENTS_PER_DELIVERY_JOB);
      const startAfter = new Date(Math.max(...chunk.map((h) => h.runAt)));
      const data: DeliverEventJob = { event_ids: chunk.map((h) => h.eventId), ...(bulk ? { bulk: true } : {}) };
      jobs.push({ id: newId(Date.now()), data, startAfter, ...(bulk ? { priority: BULK_JOB_PRIORITY } : {}) });
    }
  }
  await boss.insert(DELIVER_EVENT_QUEUE, jobs, { db: bossDb(tx) });
}

const timers = new WeakMap<PgBoss, Map<number, NodeJS.Timeout>>();
/** Timers further out than this are left to the workers' polling (and to the process still running then). */
const LONGEST_TIMER_MS = 24 * 3600 * 1000;

/**
 * Wakes the delivery workers when runs become due; call it after the transaction that held them back
 * has committed. One timer per due second per process; never keeps the process alive.
 */
export function wakeWhenDue(boss: PgBoss, logger: Logger, runAts: number[], now: number = Date.now()): void {
  let pending = timers.get(boss);
  if (!pending) timers.set(boss, (pending = new Map()));
  for (const runAt of runAts) {
    const second = Math.ceil(runAt / 1000) * 1000;
    const wait = second - now;
    if (pending.has(second) || wait > LONGEST_TIMER_MS) continue;
    const timer = setTimeout(
      () => {
        pending.delete(second);
        wakeDeliveryWorkers(boss, logger);
      },
      Math.max(0, wait),
    );
    timer.unref();
    pending.set(second, timer);
  }
}

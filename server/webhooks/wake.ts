// Waking a process's webhook dispatcher when outbox rows may have been committed. Delivery runs (the
// worker role, where the dispatcher runs too) call it after their commits, whose triggers write the
// delivery.* and event.completed rows: an in-process signal, so that no NOTIFY rides in the delivery
// transactions (a NOTIFY makes every committing transaction wait for the previous one's flush).
// Rows written elsewhere (an API process) are found by the dispatcher's idle polling.
import type { Context } from '../base/context.ts';

const wakers = new WeakMap<Context, () => void>();

export function registerWebhookWaker(runtime: Context, wake: () => void): void {
  wakers.set(runtime, wake);
}

export function unregisterWebhookWaker(runtime: Context): void {
  wakers.delete(runtime);
}

/** Wakes this process's dispatcher, if it runs one; costs nothing otherwise. */
export function wakeWebhookDispatch(runtime: Context): void {
  wakers.get(runtime)?.();
}

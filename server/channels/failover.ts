// Failover across a channel's providers (SMS providers, email's primary and fallback relay): a
// delivery's attempt asks them in priority order and stops at the first that takes the message. A
// retryable failure (connection, timeout, 429, 5xx, SMTP 4xx) moves on to the next provider within
// the same attempt; a permanent one (an invalid number, another 4xx) ends the attempt, since another
// provider would refuse the same message. A provider that failed FAILURES_TO_OPEN times in a row is
// skipped for OPEN_MS (its circuit is open), then asked once (a probe) before it is trusted again;
// the last provider of a list is asked even while its circuit is open when no other was asked, so that
// an attempt is never spent without a send (a channel with one provider keeps its retry schedule).
// A 429 with Retry-After pauses that provider for that long under its key (a tenant's own, so one
// tenant's limit never holds another's messages); nothing waits: the next provider is asked, or, when
// every provider is paused, the delivery waits for the earliest pause to end (the outcome's retryAt),
// without spending a retry. Circuits are per process: each worker learns of an outage by itself.
import type { Context } from '../base/context.ts';
import type { DeliveryOutcome, ProviderAttempt } from './types.ts';

/** What one provider answered to one send. */
export type ProviderAnswer =
  | { status: 'sent'; providerMessageId?: string | null }
  | {
      status: 'failed';
      error: string;
      retryable: boolean;
      retryAfterMs?: number;
      /**
       * The provider answered and refused this message for now (an SMTP 4xx to one recipient): worth
       * another provider or a retry, but no sign of the provider's health, so not counted towards its circuit.
       */
      messageFault?: boolean;
    };

export interface ProviderCandidate {
  /** The provider's name as deliveries and the activity log show it (`twilio`, `smtp`, `smtp-fallback`). */
  provider: string;
  /**
   * Whose circuit and pause this send counts towards: the tenant's provider (`tenant:sms:twilio`), or
   * narrower where the provider limits per destination (a Slack webhook URL).
   */
  circuitKey: string;
  send(): Promise<ProviderAnswer>;
}

export const FAILURES_TO_OPEN = 5;
const MIN_PAUSE_MS = 1000;
export const OPEN_MS = 30_000;
/** Circuits remembered at most per process; past it the least recently used is forgotten. */
const MAX_CIRCUITS = 10_000;

interface CircuitState {
  failures: number;
  /** Until then the provider is not asked (its circuit is open); 0: closed. */
  openUntil: number;
  /** A probe is out: the circuit's one request after it reopened. */
  probing: boolean;
  /** Until then the provider is not asked: it said so (429 with Retry-After). */
  pausedUntil: number;
}

type Admission = { ask: true; probe: boolean } | { ask: false; why: string; pausedUntil: number | null };

/** The circuits of one runtime (tests run several runtimes in one process). */
export class Circuits {
  readonly #states = new Map<string, CircuitState>();

  admit(key: string, now: number): Admission {
    const state = this.#states.get(key);
    if (!state) return { ask: true, probe: false };
    if (state.pausedUntil > now)
      return {
        ask: false,
        why: `paused by the provider for ${Math.ceil((state.pausedUntil - now) / 1000)} s`,
        pausedUntil: state.pausedUntil,
      };
    if (state.openUntil === 0) return { ask: true, probe: false };
    if (state.openUntil > now || state.probing)
      return { ask: false, why: `skipped: ${state.failures} failures in a row, circuit open`, pausedUntil: null };
    state.probing = true;
    return { ask: true, probe: true };
  }

  succeeded(key: string): void {
    this.#states.delete(key);
  }

  failed(key: string, now: number): void {
    const state = this.#state(key);
    state.failures += 1;
    state.probing = false;
    if (state.failures >= FAILURES_TO_OPEN) state.openUntil = now + OPEN_MS;
  }

  paused(key: string, until: number): void {
    const state = this.#state(key);
    state.pausedUntil = Math.max(state.pausedUntil, until);
    state.probing = false;
  }

  /**
   * The provider answered but refused one message (for good, or for now): it is up, so its run of
   * failures ends, and so does a probe.
   */
  settled(key: string): void {
    const state = this.#states.get(key);
    if (!state) return;
    state.probing = false;
    state.failures = 0;
    state.openUntil = 0;
  }

  #state(key: string): CircuitState {
    let state = this.#states.get(key);
    if (state) {
      this.#states.delete(key);
    } else {
      state = { failures: 0, openUntil: 0, probing: false, pausedUntil: 0 };
      if (this.#states.size >= MAX_CIRCUITS) this.#states.delete(this.#states.keys().next().value!);
    }
    this.#states.set(key, state);
    return state;
  }
}

const circuits = new WeakMap<Context, Circuits>();

export function circuitsOf(runtime: Context): Circuits {
  let found = circuits.get(runtime);
  if (!found) {
    found = new Circuits();
    circuits.set(runtime, found);
  }
  return found;
}

/**
 * Sends through the first candidate that takes the message, as the header says. The outcome names
 * the provider that answered last and every provider asked or passed over, in order.
 */
export async function sendWithFailover(runtime: Context, candidates: ProviderCandidate[]): Promise<DeliveryOutcome> {
  const state = circuitsOf(runtime);
  const trail: ProviderAttempt[] = [];
  let last: { provider: string; error: string } | null = null;
  let asked = false;
  // When the earliest pause ends, while every provider so far was paused rather than failing; null
  // once one failed otherwise (then the retry schedule decides).
  let pausesEnd: number | null = Infinity;
  const noteFailure = (pausedUntil: number | null) => {
    pausesEnd = pausedUntil === null || pausesEnd === null ? null : Math.min(pausesEnd, pausedUntil);
  };
  for (const [index, candidate] of candidates.entries()) {
    const now = runtime.clock.now();
    const admission = state.admit(candidate.circuitKey, now);
    // An attempt never ends without asking anyone for an open circuit alone: the last provider is
    // asked all the same, so a channel with one provider keeps trying on its retry schedule.
    const lastResort =
      !asked && index === candidates.length - 1 && admission.ask === false && admission.pausedUntil === null;
    if (!admission.ask && !lastResort) {
      noteFailure(admission.pausedUntil);
      trail.push({
        at: new Date(now).toISOString(),
        provider: candidate.provider,
        outcome: 'skipped',
        error: admission.why,
      });
      last ??= { provider: candidate.provider, error: admission.why };
      continue;
    }
    asked = true;
    let answer: ProviderAnswer;
    try {
      answer = await candidate.send();
    } catch (error) {
      answer = { status: 'failed', error: (error as Error).message, retryable: true };
    }
    const at = new Date(runtime.clock.now()).toISOString();
    if (answer.status === 'sent') {
      state.succeeded(candidate.circuitKey);
      trail.push({ at, provider: candidate.provider, outcome: 'sent', error: null });
      return {
        status: 'sent',
        providerMessageId: answer.providerMessageId ?? null,
        provider: candidate.provider,
        providerAttempts: trail,
      };
    }
    trail.push({ at, provider: candidate.provider, outcome: 'failed', error: answer.error });
    if (!answer.retryable) {
      state.settled(candidate.circuitKey);
      return {
        status: 'failed',
        error: answer.error,
        retryable: false,
        provider: candidate.provider,
        providerAttempts: trail,
      };
    }
    if (answer.messageFault) {
      state.settled(candidate.circuitKey);
      noteFailure(null);
    } else if (answer.retryAfterMs !== undefined) {
      // A Retry-After of 0 (or a date past) still pauses a little: asking again at once would only
      // spend the delivery's budget of pauses on a provider that is limiting it.
      const until = runtime.clock.now() + Math.max(answer.retryAfterMs, MIN_PAUSE_MS);
      state.paused(candidate.circuitKey, until);
      noteFailure(until);
    } else {
      state.failed(candidate.circuitKey, runtime.clock.now());
      noteFailure(null);
    }
    last = { provider: candidate.provider, error: answer.error };
  }
  if (!last) return { status: 'skipped', reason: 'no_transport' };
  return {
    status: 'failed',
    error: candidates.length > 1 ? `every provider failed; last: ${last.provider}: ${last.error}` : last.error,
    retryable: true,
    ...(pausesEnd !== null && Number.isFinite(pausesEnd) ? { retryAt: pausesEnd } : {}),
    provider: last.provider,
    providerAttempts: trail,
  };
}

/** Retry-After as milliseconds (seconds or an HTTP date), capped at an hour; undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  const seconds = Number(text);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(text) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 0), 3_600_000);
}

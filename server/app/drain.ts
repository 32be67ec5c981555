// A stop in named steps under one deadline (shutdownTimeoutMs). Each step is bounded by its own limit and by
// the time left: a step that waits on something lost (a connection cut by a database outage, a relay that
// never answers) is logged and left behind, so that the next steps run and the process ends on time. The
// last part of the deadline is kept for the embedded PostgreSQL's stop, which runs whatever came before.
import type { Logger } from '../base/logger.ts';

/** Of the deadline, the part kept for the last step (stopping the embedded PostgreSQL): a quarter, 2 to 10 s. */
export function finalReserveMs(timeoutMs: number): number {
  return Math.min(10_000, Math.max(2000, Math.floor(timeoutMs / 4)));
}

export class Drain {
  readonly timeoutMs: number;
  /** Date.now() by which the whole stop is over. */
  readonly deadline: number;
  /** Steps left behind at their limit, and steps that failed. */
  readonly unfinished: string[] = [];
  readonly failed: string[] = [];
  readonly #logger: Logger;
  readonly #reserveMs: number;
  readonly #stepsAt: 'info' | 'debug';
  #current: string | null = null;

  /** `stepsAt`: the level of each finished step's line (info for `herald start`, debug for one-shot commands). */
  constructor(logger: Logger, timeoutMs: number, options: { stepsAt?: 'info' | 'debug' } = {}) {
    this.#logger = logger;
    this.#stepsAt = options.stepsAt ?? 'debug';
    this.timeoutMs = timeoutMs;
    this.deadline = Date.now() + timeoutMs;
    this.#reserveMs = finalReserveMs(timeoutMs);
  }

  /** The step running now, if any. */
  get current(): string | null {
    return this.#current;
  }

  /** True when every step so far finished within its limit, without an error. */
  get clean(): boolean {
    return this.unfinished.length === 0 && this.failed.length === 0;
  }

  /** Milliseconds left for steps: until the final reserve, or (`final`) until the deadline itself. */
  remaining(final = false): number {
    return Math.max(0, this.deadline - (final ? 0 : this.#reserveMs) - Date.now());
  }

  /** Records work that did not finish without being a step that timed out (jobs still running, say). */
  leftBehind(what: string): void {
    this.unfinished.push(what);
  }

  /**
   * Runs `work`, waiting for it at most `limitMs` and never past the time left (`final`: the deadline, not
   * the reserve before it). It is always started, even with no time left: the embedded PostgreSQL's stop
   * then at least receives its signal.
   */
  async step(name: string, limitMs: number, work: () => Promise<unknown>, options: { final?: boolean } = {}) {
    const limit = Math.min(limitMs, this.remaining(options.final));
    const started = Date.now();
    this.#current = name;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), limit);
    });
    const done = Promise.resolve()
      .then(work)
      .then(
        () => 'done' as const,
        (error: unknown) => {
          this.failed.push(name);
          this.#logger.warn('stop step failed', { step: name, error });
          return 'failed' as const;
        },
      );
    try {
      const outcome = await Promise.race([done, late]);
      if (outcome === 'late') {
        this.unfinished.push(name);
        this.#logger.warn('stop step did not finish in time; going on', { step: name, limit_ms: limit });
      } else if (outcome === 'done') this.#logger[this.#stepsAt]('stopped', { step: name, ms: Date.now() - started });
    } finally {
      clearTimeout(timer);
      this.#current = null;
    }
  }
}

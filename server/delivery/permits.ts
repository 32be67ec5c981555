// A fixed number of permits to run some work, handed to urgent waiters before the others, but never
// past a bulk waiter that has waited `bulkPatienceMs`: urgent work that keeps coming delays bulk work,
// it does not stall it (the delivery worker's jobs expire 300 s after their fetch, waiting included).
// The delivery worker holds one for each batched run (jobs/deliver-event.ts says why).
export class Permits {
  #free: number;
  readonly #bulkPatienceMs: number;
  readonly #now: () => number;
  readonly #urgent: Array<() => void> = [];
  readonly #bulk: Array<{ since: number; resolve: () => void }> = [];

  constructor(size: number, options: { bulkPatienceMs: number; now?: () => number }) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`permits: size must be a positive integer, not ${size}`);
    this.#free = size;
    this.#bulkPatienceMs = options.bulkPatienceMs;
    this.#now = options.now ?? Date.now;
  }

  /** Runs `work` once a permit is free, and frees the permit when it settles. */
  async run<T>(urgent: boolean, work: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else
      await new Promise<void>((resolve) => {
        if (urgent) this.#urgent.push(resolve);
        else this.#bulk.push({ since: this.#now(), resolve });
      });
    try {
      return await work();
    } finally {
      this.#release();
    }
  }

  /** Hands the permit to the next waiter (the permit stays taken), or frees it. */
  #release(): void {
    const oldestBulk = this.#bulk[0];
    const bulkFirst = oldestBulk !== undefined && (this.#urgent.length === 0 || this.#now() - oldestBulk.since >= this.#bulkPatienceMs);
    const next = bulkFirst ? this.#bulk.shift()!.resolve : this.#urgent.shift();
    if (next) next();
    else this.#free++;
  }
}

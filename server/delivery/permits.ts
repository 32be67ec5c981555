// A fixed number of permits to run some work, handed to urgent waiters before the others, but never
// past a bulk waiter that has waited `bulkPatienceMs`: urgent work that keeps coming delays bulk work,
// it does not stall it (the delivery worker's jobs expire 300 s after their fetch, waiting included).
// Bulk work holds at most `bulkSize` of them at once, so that urgent work arriving while bulk work
// fills its share finds a permit without waiting for a bulk run to end.
// The delivery worker holds one for each batched run (jobs/deliver-event.ts says why).
export class Permits {
  #free: number;
  #bulkRunning = 0;
  readonly #bulkSize: number;
  readonly #bulkPatienceMs: number;
  readonly #now: () => number;
  readonly #urgent: Array<() => void> = [];
  readonly #bulk: Array<{ since: number; resolve: () => void }> = [];

  constructor(size: number, options: { bulkPatienceMs: number; bulkSize?: number; now?: () => number }) {
    const bulkSize = options.bulkSize ?? size;
    if (!Number.isInteger(size) || size < 1) throw new Error(`permits: size must be a positive integer, not ${size}`);
    if (!Number.isInteger(bulkSize) || bulkSize < 1 || bulkSize > size)
      throw new Error(`permits: bulkSize must be an integer from 1 to ${size}, not ${bulkSize}`);
    this.#free = size;
    this.#bulkSize = bulkSize;
    this.#bulkPatienceMs = options.bulkPatienceMs;
    this.#now = options.now ?? Date.now;
  }

  /** Runs `work` once a permit is free (for bulk work, one within its share), and frees it when it settles. */
  async run<T>(urgent: boolean, work: () => Promise<T>): Promise<T> {
    if (this.#free > 0 && (urgent || this.#bulkRunning < this.#bulkSize)) {
      this.#free--;
      if (!urgent) this.#bulkRunning++;
    } else {
      // A waiter is handed its permit already counted (#release).
      await new Promise<void>((resolve) => {
        if (urgent) this.#urgent.push(resolve);
        else this.#bulk.push({ since: this.#now(), resolve });
      });
    }
    try {
      return await work();
    } finally {
      if (!urgent) this.#bulkRunning--;
      this.#release();
    }
  }

  /** Hands the permit to the next waiter (the permit stays taken), or frees it. */
  #release(): void {
    const oldestBulk = this.#bulkRunning < this.#bulkSize ? this.#bulk[0] : undefined;
    const bulkFirst =
      oldestBulk !== undefined && (this.#urgent.length === 0 || this.#now() - oldestBulk.since >= this.#bulkPatienceMs);
    if (bulkFirst) {
      this.#bulkRunning++;
      this.#bulk.shift()!.resolve();
      return;
    }
    const next = this.#urgent.shift();
    if (next) next();
    else this.#free++;
  }
}

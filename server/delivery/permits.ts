// A fixed number of permits to run some work, handed to urgent waiters before the others. The delivery
// worker holds one for each batched run (jobs/deliver-event.ts says why).
export class Permits {
  #free: number;
  readonly #urgent: Array<() => void> = [];
  readonly #bulk: Array<() => void> = [];

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`permits: size must be a positive integer, not ${size}`);
    this.#free = size;
  }

  /** Runs `work` once a permit is free (an urgent caller first), and frees the permit when it settles. */
  async run<T>(urgent: boolean, work: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => (urgent ? this.#urgent : this.#bulk).push(resolve));
    try {
      return await work();
    } finally {
      const next = this.#urgent.shift() ?? this.#bulk.shift();
      if (next) next();
      else this.#free++;
    }
  }
}

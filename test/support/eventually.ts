// The one way a test waits for something to happen: it polls a condition instead of sleeping a fixed
// time, so a fast machine moves on at once and a slow one still gets the whole timeout.

export interface EventuallyOptions {
  /** How long the condition may take to hold (default 10 s). */
  timeoutMs?: number;
  /** The pause between two checks (default 50 ms). */
  intervalMs?: number;
  /** What the failure says when the condition never held and never threw. */
  message?: string;
}

/**
 * Polls `check` until it holds and resolves with what it returned. `check` holds when it neither throws
 * nor returns `false`, so it can be a boolean condition, an assertion (`expect(...)` throwing until it
 * passes) or a lookup returning the value the test wants. Past the timeout it fails with the last error
 * the check threw, or with `message`.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  options: EventuallyOptions = {},
): Promise<Exclude<T, false>> {
  const { timeoutMs = 10_000, intervalMs = 50, message } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let lastError: unknown;
    try {
      const value = await check();
      if (value !== false) return value as Exclude<T, false>;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      if (lastError instanceof Error) {
        if (message) lastError.message = `${message}: ${lastError.message}`;
        throw lastError;
      }
      throw new Error(message ?? `condition not met within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

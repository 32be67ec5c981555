// Whether the database answers, as the process last saw it. An outage is logged once when it starts and
// once when it ends (never once per request); meanwhile requests answer 503 database_unavailable with
// Retry-After, /healthz and /readyz say so, and a probe notices the database's return, so the process
// recovers without a restart.
import type { Logger } from '../logger.ts';

/** Seconds a client is told to wait before retrying during an outage. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

// Connection-level failures: the server is gone, refuses, restarts or shuts down. Anything else (a
// constraint, a syntax error) is a bug or bad input, not an outage.
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EPIPE',
  'ENOENT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
const SQLSTATE_CLASSES = ['08', '57P'];
const MESSAGES = [
  'Connection terminated',
  'connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'the database system is starting up',
  'the database system is shutting down',
  'terminating connection due to administrator command',
  'Connection is closed',
  'Cannot use a pool after calling end',
];

/** True when `error` (or what it wraps) says the database cannot be reached right now. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (
    let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 6;
    e = e.cause as typeof e, depth++
  ) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (NETWORK_CODES.has(code) || SQLSTATE_CLASSES.some((c) => code.startsWith(c))) return true;
    const message = typeof e.message === 'string' ? e.message : '';
    if (MESSAGES.some((m) => message.includes(m))) return true;
  }
  return false;
}

export class DatabaseAvailability {
  #down: { since: number; reason: string } | null = null;
  #probe: ReturnType<typeof setInterval> | null = null;
  readonly #logger: Logger;
  readonly #check: () => Promise<unknown>;

  constructor(logger: Logger, check: () => Promise<unknown>) {
    this.#logger = logger;
    this.#check = check;
  }

  get available(): boolean {
    return this.#down === null;
  }

  /** Records an outage (logged once) and probes every second until the database answers again. */
  markDown(reason: unknown): void {
    if (this.#down) return;
    const message = (reason as { message?: unknown } | null)?.message;
    const text = typeof message === 'string' ? message : String(reason);
    this.#down = { since: Date.now(), reason: text };
    this.#logger.warn('database unavailable', { reason: text.split('\n')[0] });
    this.#probe = setInterval(() => {
      this.#check().then(
        () => this.markUp(),
        () => undefined,
      );
    }, 1000);
    this.#probe.unref();
  }

  markUp(): void {
    if (!this.#down) return;
    const outageMs = Date.now() - this.#down.since;
    this.#down = null;
    if (this.#probe) clearInterval(this.#probe);
    this.#probe = null;
    this.#logger.info('database available again', { outage_ms: outageMs });
  }

  close(): void {
    if (this.#probe) clearInterval(this.#probe);
    this.#probe = null;
  }
}

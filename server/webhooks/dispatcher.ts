// The webhook dispatcher (worker role): sends the outbox's due rows (webhook_deliveries) with bounded
// concurrency and records each attempt. Claiming a row pushes its next_attempt_at out by a lease, so
// rows of a worker that dies (kill -9) become due again once the lease ends: delivery is at least
// once. Outbox rows are written by the transactions that make the changes (triggers and services);
// the delivery runs of this process wake the dispatcher after their commits (wake.ts), and for a
// short while after a wake it polls quickly, so a row is sent within milliseconds of its commit.
// Otherwise it polls once per pollMs while idle: rows written by other processes wait that long.
// While no endpoint is enabled at all, as its idle polls find, it ignores the wakes: no row can be
// due, and a drain of deliveries would otherwise cost hundreds of empty polls a second.
import type { Context } from '../base/context.ts';
import { query } from '../base/db/sql.ts';
import { jsonRowsParameter, jsonRowsSql, type JsonRowColumns } from '../base/db/json-rows.ts';
import { postWebhook, type PostResult } from './post.ts';
import { secretKey, signedHeaders } from './signing.ts';
import { webhookSecretAad } from '../base/crypto/aad.ts';
import { registerWebhookWaker, unregisterWebhookWaker } from './wake.ts';
import { isDatabaseUnavailable } from '../base/db/availability.ts';
import { metricsOf } from '../base/metrics/registry.ts';

export interface WebhookDispatchOptions {
  /** Waits before the 2nd, 3rd ... attempt; after the last, the delivery is failed. */
  retryScheduleMs?: number[];
  /** Sleep between polls while nothing is due and nothing woke the dispatcher. */
  pollMs?: number;
  /** How long a claimed row stays invisible to other dispatchers. */
  leaseMs?: number;
  batchSize?: number;
  /** Requests in flight at once, per dispatcher loop. */
  concurrency?: number;
  /** Claiming loops per process (each sends its own batch). */
  loops?: number;
  timeoutMs?: number;
  /** An endpoint failing for this long without a success is disabled. */
  disableAfterMs?: number;
}

const MINUTE = 60_000;
const HOT_MS = 250;
const HOT_POLL_MS = 5;
const HOUR = 60 * MINUTE;
export const RETRY_SCHEDULE_MS = [5_000, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

const DEFAULTS: Required<WebhookDispatchOptions> = {
  retryScheduleMs: RETRY_SCHEDULE_MS,
  pollMs: 1000,
  leaseMs: 2 * MINUTE,
  batchSize: 200,
  concurrency: 48,
  loops: 2,
  timeoutMs: 10_000,
  disableAfterMs: 3 * 24 * HOUR,
};

interface ClaimedRow {
  id: string;
  endpoint_id: string;
  payload: string;
  attempts: number;
  url: string;
  secret_ciphertext: string;
}

interface Outcome {
  id: string;
  endpoint_id: string;
  status: 'pending' | 'succeeded' | 'failed';
  code: number | null;
  error: string | null;
  delay_ms: number | null;
  /** 'ok': the endpoint answered 2xx; 'gone': 410; 'fail': anything else. */
  endpoint: 'ok' | 'gone' | 'fail';
}

/** An outcome's columns, as the attempts' statement reads them. */
const OUTCOME_COLUMNS = [
  ['id', 'uuid'],
  ['status', 'text'],
  ['code', 'int'],
  ['error', 'text'],
  ['delay_ms', 'bigint'],
] as const satisfies JsonRowColumns<Outcome>;

const CLAIM_DUE = `WITH due AS (
         SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.enabled
          WHERE d.status = 'pending' AND d.next_attempt_at <= now()
          ORDER BY d.next_attempt_at LIMIT $1 FOR UPDATE OF d SKIP LOCKED
       )
       UPDATE webhook_deliveries d SET next_attempt_at = now() + $2 * interval '1 millisecond'
         FROM due, webhook_endpoints w
        WHERE d.id = due.id AND w.id = d.endpoint_id
        RETURNING d.id, d.endpoint_id, d.payload::text AS payload, d.attempts, w.url, w.secret_ciphertext`;

// One statement: the attempts, then the endpoints' health (a success clears failing_since; an
// endpoint failing for disableAfterMs, or answering 410, is disabled).
const RECORD_ATTEMPTS = `WITH attempts AS (
         UPDATE webhook_deliveries d
            SET status = r.status, attempts = d.attempts + 1, last_status_code = r.code, last_error = r.error,
                next_attempt_at = CASE WHEN r.status = 'pending' THEN now() + r.delay_ms * interval '1 millisecond'
                                  ELSE d.next_attempt_at END,
                updated_at = now()
           FROM ${jsonRowsSql('$1', OUTCOME_COLUMNS)} AS r
          WHERE d.id = r.id
          RETURNING 1
       ), healthy AS (
         UPDATE webhook_endpoints SET failing_since = NULL
          WHERE id = ANY ($2::uuid[]) AND failing_since IS NOT NULL RETURNING 1
       ), failing AS (
         UPDATE webhook_endpoints
            SET failing_since = coalesce(failing_since, now()),
                enabled = CASE WHEN id = ANY ($4::uuid[]) OR failing_since < now() - $5 * interval '1 millisecond'
                               THEN false ELSE enabled END,
                disabled_reason = CASE WHEN id = ANY ($4::uuid[]) THEN 'gone: the endpoint answered 410'
                                       WHEN failing_since < now() - $5 * interval '1 millisecond'
                                         THEN 'failing: no successful delivery for three days'
                                       ELSE disabled_reason END,
                updated_at = now()
          WHERE id = ANY ($3::uuid[] || $4::uuid[]) AND NOT (id = ANY ($2::uuid[]))
          RETURNING 1
       )
       SELECT (SELECT count(*) FROM attempts) + (SELECT count(*) FROM healthy) + (SELECT count(*) FROM failing) AS n`;
const ANY_ENDPOINT_ENABLED = `SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled) AS enabled`;

export interface WebhookDispatcher {
  stop(): Promise<void>;
}

export function startWebhookDispatcher(runtime: Context, overrides: WebhookDispatchOptions = {}): WebhookDispatcher {
  const options = { ...DEFAULTS, ...overrides };
  const secrets = new Map<string, { ciphertext: string; key: Buffer }>();
  let stopped = false;
  const sleepers = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();

  const keyOf = (row: ClaimedRow): Buffer => {
    const cached = secrets.get(row.endpoint_id);
    if (cached && cached.ciphertext === row.secret_ciphertext) return cached.key;
    const key = secretKey(runtime.keyRing.decrypt(row.secret_ciphertext, webhookSecretAad(row.endpoint_id)));
    if (secrets.size > 10_000) secrets.clear();
    secrets.set(row.endpoint_id, { ciphertext: row.secret_ciphertext, key });
    return key;
  };

  const attempt = async (row: ClaimedRow): Promise<Outcome> => {
    let result: PostResult;
    try {
      const headers = signedHeaders(keyOf(row), row.id, Math.floor(Date.now() / 1000), row.payload);
      result = await postWebhook(runtime, row.url, headers, row.payload, options.timeoutMs);
    } catch {
      result = { kind: 'unreachable', error: 'the signing secret cannot be decrypted: rotate it' };
    }
    const code = result.kind === 'answered' ? result.status : null;
    if (code !== null && code >= 200 && code < 300)
      return {
        id: row.id,
        endpoint_id: row.endpoint_id,
        status: 'succeeded',
        code,
        error: null,
        delay_ms: null,
        endpoint: 'ok',
      };
    const error =
      result.kind === 'answered'
        ? `HTTP ${code}${code! >= 300 && code! < 400 ? ' (redirects are not followed)' : ''}`
        : result.error;
    const delay = code === 410 ? undefined : options.retryScheduleMs[row.attempts];
    return {
      id: row.id,
      endpoint_id: row.endpoint_id,
      status: delay === undefined ? 'failed' : 'pending',
      code,
      error,
      delay_ms: delay ?? null,
      endpoint: code === 410 ? 'gone' : 'fail',
    };
  };

  const polls = metricsOf(runtime).webhookPolls;
  const claim = (em: ReturnType<Context['orm']['em']['fork']>) => {
    polls.inc();
    return query<ClaimedRow>(em, CLAIM_DUE, [options.batchSize, options.leaseMs]);
  };

  const record = async (em: ReturnType<Context['orm']['em']['fork']>, outcomes: Outcome[]) => {
    const ok = [...new Set(outcomes.filter((o) => o.endpoint === 'ok').map((o) => o.endpoint_id))];
    const failing = [...new Set(outcomes.filter((o) => o.endpoint === 'fail').map((o) => o.endpoint_id))];
    const gone = [...new Set(outcomes.filter((o) => o.endpoint === 'gone').map((o) => o.endpoint_id))];
    await query(em, RECORD_ATTEMPTS, [
      jsonRowsParameter(outcomes, OUTCOME_COLUMNS),
      ok,
      failing,
      gone,
      options.disableAfterMs,
    ]);
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const sleeper = {
        timer: setTimeout(() => {
          sleepers.delete(sleeper);
          resolve();
        }, ms),
        resolve,
      };
      sleepers.add(sleeper);
    });

  /** Whether the last idle poll found an enabled endpoint (until the first, assumed). */
  let anyEndpointEnabled = true;
  const findEnabledEndpoint = async (em: ReturnType<Context['orm']['em']['fork']>) => {
    const [row] = await query<{ enabled: boolean }>(em, ANY_ENDPOINT_ENABLED);
    anyEndpointEnabled = row!.enabled;
  };

  // After a wake, the loops poll every HOT_POLL_MS for HOT_MS: the waking transaction may not have
  // committed yet when the signal arrives.
  let hotUntil = 0;
  registerWebhookWaker(runtime, () => {
    if (!anyEndpointEnabled) return;
    hotUntil = Date.now() + HOT_MS;
    for (const sleeper of sleepers) {
      clearTimeout(sleeper.timer);
      sleeper.resolve();
    }
    sleepers.clear();
  });

  // The first loop polls every pollMs while idle, and then looks for an enabled endpoint; the others,
  // which add throughput under load, poll five times less often, so an idle worker costs the database
  // about two cheap queries per pollMs.
  const loop = async (index: number) => {
    while (!stopped) {
      const hot = Date.now() < hotUntil;
      const idleMs = hot ? HOT_POLL_MS : index === 0 ? options.pollMs : options.pollMs * 5;
      try {
        const em = runtime.orm.em.fork();
        const rows = await claim(em);
        if (rows.length === 0) {
          if (index === 0 && !hot) await findEnabledEndpoint(em);
          await sleep(idleMs);
          continue;
        }
        anyEndpointEnabled = true; // a claimed row's endpoint is enabled
        const outcomes: Outcome[] = [];
        let next = 0;
        const lane = async () => {
          while (next < rows.length) {
            const row = rows[next++]!;
            outcomes.push(await attempt(row));
          }
        };
        await Promise.all(Array.from({ length: Math.min(options.concurrency, rows.length) }, lane));
        await record(em, outcomes);
        const failed = outcomes.filter((o) => o.status !== 'succeeded').length;
        if (failed > 0) runtime.logger.debug('webhook attempts failed', { failed, sent: outcomes.length });
      } catch (error) {
        if (stopped) break;
        // During a database outage every poll fails: that is the outage, logged once, not a line per poll.
        if (isDatabaseUnavailable(error)) runtime.availability.markDown(error);
        else runtime.logger.warn('webhook dispatch failed', { error });
        await sleep(1000);
      }
    }
  };

  const loops = Array.from({ length: options.loops }, (_, index) => loop(index));
  return {
    async stop() {
      stopped = true;
      unregisterWebhookWaker(runtime);
      for (const sleeper of sleepers) {
        clearTimeout(sleeper.timer);
        sleeper.resolve();
      }
      sleepers.clear();
      await Promise.all(loops);
    },
  };
}

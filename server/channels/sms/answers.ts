// How an SMS provider's HTTP answer maps onto failover's terms, shared by the three providers: 429
// and 5xx are retryable (Retry-After respected); 401 and 403 are a refused credential; any other 4xx
// is permanent (another provider would refuse the same message). Errors keep the status and the
// provider's code only, never its body: bodies echo the recipient's number and the text.
import type { ProviderAnswer } from '../failover.ts';

/**
 * One text to send. `reference`: the delivery's id, for the providers that echo one in their
 * receipts (Vonage's client-ref); absent for a test send.
 */
export interface SmsMessage {
  to: string;
  text: string;
  reference?: string;
}
import { retryAfterMs } from '../failover.ts';
import type { ProviderResponse } from '../provider-http.ts';

/**
 * A provider's answer, and whether it refused the tenant's credentials (401/403, Vonage's bad
 * credentials). Such a refusal fails over to the next provider, but is not worth a retry later when
 * no provider failed for a passing reason (the channel makes the outcome final then).
 */
export type SmsAnswer = ProviderAnswer & { credentialsRefused?: boolean };

export function failure(
  error: string,
  retryable: boolean,
  extra: { retryAfterMs?: number; credentialsRefused?: boolean } = {},
): SmsAnswer {
  return {
    status: 'failed',
    error,
    retryable,
    ...(extra.retryAfterMs !== undefined ? { retryAfterMs: extra.retryAfterMs } : {}),
    ...(extra.credentialsRefused ? { credentialsRefused: true } : {}),
  };
}

/** A short code from a provider's answer (digits or an identifier), or null. */
export function codeOf(value: unknown): string | null {
  const text = typeof value === 'number' ? String(value) : value;
  return typeof text === 'string' && /^[A-Za-z0-9_.-]{1,32}$/.test(text) ? text : null;
}

/** The answer to a non-2xx HTTP status. */
export function httpFailure(response: ProviderResponse, now: number, code: string | null): SmsAnswer {
  const error = `HTTP ${response.status}${code ? ` code ${code}` : ''}`;
  if (response.status === 429)
    return failure(error, true, { retryAfterMs: retryAfterMs(response.headers['retry-after'], now) });
  if (response.status >= 500)
    return failure(error, true, { retryAfterMs: retryAfterMs(response.headers['retry-after'], now) });
  if (response.status === 401 || response.status === 403)
    return failure(`${error} (credentials refused)`, true, { credentialsRefused: true });
  return failure(error, false);
}

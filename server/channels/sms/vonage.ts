// Vonage's SMS API: POST /sms/json with api_key and api_secret in the body. It answers 200 even when
// it refuses, with a status per message part: "0" accepted (its message-id names the message in
// delivery receipts), "1" throttled (retryable), "4"/"8"/"9"/"14" the account's credentials or standing
// (fail over), "5" an internal error (retryable), the rest ("2", "3", "6", "7", "15") permanent.
// Receipts are asked for per message with `callback`. Signed callbacks use the signature secret.
// A long text goes out in several parts, each with its own message-id and its own receipt; every
// part's receipt carries the send's `client-ref`, so a delivery's is Herald's reference (the
// delivery's id) and its provider message id that reference: any part's receipt finds it. A text
// whose first parts were accepted and a later one refused fails for good: a retry would send the
// accepted parts again.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Context } from '../../base/context.ts';
import { answerJson, providerRequest } from '../provider-http.ts';
import { codeOf, failure, httpFailure, type SmsAnswer, type SmsMessage } from './answers.ts';
import { callbackUrl, type SmsCredentials } from './sms-transports.ts';
import { smsLength } from './encoding.ts';

type VonageCredentials = Extract<SmsCredentials, { provider: 'vonage' }>;

/** Throttled: Vonage asks for a pause of about a second per request over the account's rate. */
const THROTTLE_PAUSE_MS = 1000;
const RETRYABLE = new Set(['1', '5']);
const ACCOUNT = new Set(['4', '8', '9', '14']);

export async function sendVonage(
  runtime: Context,
  credentials: VonageCredentials,
  message: SmsMessage,
): Promise<SmsAnswer> {
  const base = runtime.config.providers.vonageUrl.replace(/\/+$/, '');
  const body: Record<string, string> = {
    api_key: credentials.api_key,
    api_secret: credentials.api_secret,
    from: credentials.from.replace(/^\+/, ''),
    to: message.to.replace(/^\+/, ''),
    text: message.text,
  };
  if (smsLength(message.text).encoding === 'ucs2') body.type = 'unicode';
  if (message.reference) body['client-ref'] = message.reference;
  const receipts = callbackUrl(runtime.config, 'vonage', credentials.callback_token);
  if (receipts) body.callback = receipts;
  const response = await providerRequest(runtime, `${base}/sms/json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
    timeoutMs: 15_000,
  });
  if (response.status < 200 || response.status >= 300) return httpFailure(response, runtime.clock.now(), null);
  const answer = answerJson(response.text) as
    { messages?: Array<{ status?: unknown; 'message-id'?: unknown }> } | undefined;
  const parts = Array.isArray(answer?.messages) ? answer.messages : [];
  const first = parts[0];
  const status = codeOf(first?.status);
  if (status === '0') {
    const refused = parts.findIndex((part) => codeOf(part?.status) !== '0');
    if (refused > 0)
      return failure(
        `part ${refused + 1} of ${parts.length} refused: status ${codeOf(parts[refused]?.status) ?? 'missing'} (the parts before it were sent)`,
        false,
      );
    const id = message.reference ?? first?.['message-id'];
    return { status: 'sent', providerMessageId: typeof id === 'string' && id.length <= 100 ? id : null };
  }
  const error = status ? `status ${status}` : 'an answer without a status';
  if (status && RETRYABLE.has(status))
    return failure(error, true, status === '1' ? { retryAfterMs: THROTTLE_PAUSE_MS } : {});
  if (status && ACCOUNT.has(status))
    return failure(`${error} (credentials refused)`, true, { credentialsRefused: true });
  return failure(error, status === null);
}

/**
 * Vonage's signature of a callback's parameters: all but `sig`, sorted by name, as "&name=value"
 * with "&" and "=" in values replaced by "_"; md5hash is the MD5 of that string and the secret, the
 * HMAC methods key it with the secret. Any of them is accepted (the account chooses one).
 */
function vonageSignatures(params: Record<string, string>, secret: string): string[] {
  let data = '';
  for (const name of Object.keys(params).sort()) {
    if (name === 'sig') continue;
    data += `&${name}=${params[name]!.replace(/[&=]/g, '_')}`;
  }
  return [
    createHash('md5')
      .update(data + secret)
      .digest('hex'),
    ...(['md5', 'sha1', 'sha256', 'sha512'] as const).map((m) => createHmac(m, secret).update(data).digest('hex')),
  ];
}

/** How far a signed callback's timestamp may be from now: beyond, it is a replay. */
const SIGNATURE_WINDOW_MS = 5 * 60_000;

export function validVonageSignature(params: Record<string, string>, secret: string, now: number): boolean {
  const given = params.sig?.toLowerCase();
  const timestamp = Number(params.timestamp);
  if (!given || !Number.isFinite(timestamp) || Math.abs(now - timestamp * 1000) > SIGNATURE_WINDOW_MS) return false;
  const givenBytes = Buffer.from(given);
  let valid = false;
  for (const expected of vonageSignatures(params, secret)) {
    const bytes = Buffer.from(expected.toLowerCase());
    if (bytes.length === givenBytes.length && timingSafeEqual(bytes, givenBytes)) valid = true;
  }
  return valid;
}

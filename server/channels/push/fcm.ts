// Firebase Cloud Messaging HTTP v1: the service account signs an RS256 assertion, exchanged at the
// OAuth token endpoint for an access token (cached until a minute before it expires), which
// authorizes POST /v1/projects/{project}/messages:send.
import type { Context } from '../../base/context.ts';
import type { PushMessage, PushOutcome } from './messages.ts';
import { credentialsFingerprint, parsePrivateKey, signJwt } from './jwt.ts';
import { describeAnswer, providerRequest, providerState, ProviderUnreachableError } from '../provider-http.ts';

export interface FcmCredentials {
  project_id: string;
  client_email: string;
  private_key: string;
  token_uri?: string | null;
}

const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';

class TokenExchangeError extends Error {
  override name = 'TokenExchangeError';
  readonly retryable: boolean;
  constructor(message: string, retryable: boolean) {
    super(message);
    this.retryable = retryable;
  }
}

/** Where the service account's access token is cached, by a fingerprint that does not reveal the key. */
const tokenCacheKey = (creds: FcmCredentials) =>
  `fcm:${credentialsFingerprint(creds, () => [creds.client_email, creds.private_key])}`;

/**
 * The cached access token, or one exchange for a new one shared by every send that asks meanwhile: a
 * burst of sends would otherwise sign and exchange an assertion each before the first answer is cached.
 */
async function accessToken(runtime: Context, creds: FcmCredentials): Promise<string> {
  const { tokens, exchanges } = providerState(runtime);
  const cacheKey = tokenCacheKey(creds);
  const cached = tokens.get(cacheKey);
  if (cached && cached.expiresAt > runtime.clock.now()) return cached.value;
  let exchange = exchanges.get(cacheKey);
  if (!exchange) {
    exchange = exchangeToken(runtime, creds, cacheKey).finally(() => exchanges.delete(cacheKey));
    exchanges.set(cacheKey, exchange);
  }
  return exchange;
}

async function exchangeToken(runtime: Context, creds: FcmCredentials, cacheKey: string): Promise<string> {
  const { tokens } = providerState(runtime);
  const now = runtime.clock.now();
  const key = parsePrivateKey(creds.private_key, 'rsa');
  if (!key) throw new TokenExchangeError('the service account private key is not an RSA key', false);
  const tokenUrl = runtime.config.providers.fcmTokenUrl ?? creds.token_uri ?? DEFAULT_TOKEN_URI;
  const iat = Math.floor(now / 1000);
  const assertion = signJwt(
    'RS256',
    {},
    { iss: creds.client_email, scope: SCOPE, aud: tokenUrl, iat, exp: iat + 3600 },
    key,
  );
  let answer;
  try {
    answer = await providerRequest(runtime, tokenUrl, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
    });
  } catch (error) {
    throw new TokenExchangeError(`token endpoint unreachable: ${(error as Error).message}`, true);
  }
  if (answer.status !== 200)
    throw new TokenExchangeError(
      `token endpoint: ${describeAnswer(answer)}`,
      answer.status === 429 || answer.status >= 500,
    );
  const parsed = JSON.parse(answer.text) as { access_token?: string; expires_in?: number };
  if (!parsed.access_token) throw new TokenExchangeError('token endpoint answered without an access token', true);
  const lifetime = Math.max(60, Number(parsed.expires_in ?? 3600));
  tokens.set(cacheKey, { value: parsed.access_token, expiresAt: now + (lifetime - 60) * 1000 });
  return parsed.access_token;
}

/** FCM data values must be strings. */
function stringData(message: PushMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(message.data ?? {})) out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  if (message.action_url) out.action_url = message.action_url;
  return out;
}

export async function sendFcm(
  runtime: Context,
  creds: FcmCredentials,
  token: string,
  message: PushMessage,
): Promise<PushOutcome> {
  let bearer: string;
  try {
    bearer = await accessToken(runtime, creds);
  } catch (error) {
    if (error instanceof TokenExchangeError)
      return { status: 'failed', error: `FCM ${error.message}`, retryable: error.retryable };
    return { status: 'failed', error: `FCM token endpoint: ${(error as Error).message}`, retryable: true };
  }
  const url = `${runtime.config.providers.fcmUrl.replace(/\/+$/, '')}/v1/projects/${encodeURIComponent(creds.project_id)}/messages:send`;
  let answer;
  try {
    answer = await providerRequest(runtime, url, {
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        message: { token, notification: { title: message.title, body: message.body }, data: stringData(message) },
      }),
    });
  } catch (error) {
    if (error instanceof ProviderUnreachableError)
      return { status: 'failed', error: `FCM unreachable: ${error.message}`, retryable: true };
    throw error;
  }
  if (answer.status === 200) {
    const name = (JSON.parse(answer.text) as { name?: string }).name;
    return { status: 'sent', providerMessageId: name };
  }
  const error = `FCM ${describeAnswer(answer)}`;
  if (answer.status === 404 || answer.text.includes('UNREGISTERED')) return { status: 'dead', error };
  if (answer.status === 401) providerState(runtime).tokens.delete(tokenCacheKey(creds));
  return { status: 'failed', error, retryable: answer.status === 401 || answer.status === 429 || answer.status >= 500 };
}

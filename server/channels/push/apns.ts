// Apple Push Notification service, token-based: an ES256 JWT signed with the team's .p8 key (cached
// ~50 minutes; Apple refuses tokens older than an hour and throttles re-signing), sent over the APNs
// origin's one HTTP/2 session (provider-http2.ts).
import type { Context } from '../../base/context.ts';
import type { PushMessage, PushOutcome } from './messages.ts';
import { credentialsFingerprint, parsePrivateKey, signJwt } from './jwt.ts';
import { providerCodes, providerRequest, providerState } from '../provider-http.ts';

export interface ApnsCredentials {
  team_id: string;
  key_id: string;
  bundle_id: string;
  environment: 'sandbox' | 'production';
  private_key: string;
}

const TOKEN_LIFETIME_MS = 50 * 60 * 1000;

function providerToken(runtime: Context, creds: ApnsCredentials, renew = false): string {
  const { tokens } = providerState(runtime);
  const cacheKey = `apns:${credentialsFingerprint(creds, () => [creds.team_id, creds.key_id, creds.private_key])}`;
  const now = runtime.clock.now();
  const cached = tokens.get(cacheKey);
  if (cached && cached.expiresAt > now && !renew) return cached.value;
  const key = parsePrivateKey(creds.private_key, 'ec-p256');
  if (!key) throw new Error('the APNs private key is not a P-256 .p8 key');
  const value = signJwt('ES256', { kid: creds.key_id }, { iss: creds.team_id, iat: Math.floor(now / 1000) }, key);
  tokens.set(cacheKey, { value, expiresAt: now + TOKEN_LIFETIME_MS });
  return value;
}

export function apnsPayload(message: PushMessage): string {
  return JSON.stringify({
    aps: { alert: { title: message.title, body: message.body }, sound: 'default' },
    ...(message.data ? { data: message.data } : {}),
    ...(message.action_url ? { action_url: message.action_url } : {}),
  });
}

export async function sendApns(
  runtime: Context,
  creds: ApnsCredentials,
  token: string,
  message: PushMessage,
): Promise<PushOutcome> {
  if (!/^[0-9A-Fa-f]{32,200}$/.test(token)) return { status: 'dead', error: 'not an APNs device token' };
  const providers = runtime.config.providers;
  const origin = new URL(creds.environment === 'sandbox' ? providers.apnsSandboxUrl : providers.apnsProductionUrl)
    .origin;
  const body = apnsPayload(message);
  for (let attempt = 0; attempt < 2; attempt++) {
    let jwt: string;
    try {
      jwt = providerToken(runtime, creds, attempt > 0);
    } catch (error) {
      return { status: 'failed', error: (error as Error).message, retryable: false };
    }
    let answer;
    try {
      answer = await providerRequest(runtime, `${origin}/3/device/${token}`, {
        headers: {
          authorization: `bearer ${jwt}`,
          'apns-topic': creds.bundle_id,
          'apns-push-type': 'alert',
          'apns-priority': '10',
          'content-type': 'application/json',
        },
        body,
      });
    } catch (error) {
      return { status: 'failed', error: `APNs unreachable: ${(error as Error).message}`, retryable: true };
    }
    if (answer.status === 200) {
      const apnsId = answer.headers['apns-id'];
      return { status: 'sent', providerMessageId: typeof apnsId === 'string' ? apnsId : undefined };
    }
    const reason = providerCodes(answer.text)[0] ?? '';
    const error = `APNs ${answer.status}${reason ? ` ${reason}` : ''}`;
    if (
      answer.status === 410 ||
      reason === 'Unregistered' ||
      reason === 'BadDeviceToken' ||
      reason === 'DeviceTokenNotForTopic'
    )
      return { status: 'dead', error };
    // A token Apple considers expired is signed again once, right away.
    if (answer.status === 403 && reason === 'ExpiredProviderToken' && attempt === 0) continue;
    return { status: 'failed', error, retryable: answer.status === 429 || answer.status >= 500 };
  }
  return { status: 'failed', error: 'APNs refused the provider token', retryable: true };
}

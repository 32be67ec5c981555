// Apple Push Notification service, token-based: an ES256 JWT signed with the team's .p8 key (cached
// ~50 minutes; Apple refuses tokens older than an hour and throttles re-signing), sent over one
// reused HTTP/2 session per APNs origin.
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import type { Runtime } from '../../runtime.ts';
import type { PushMessage, PushOutcome } from './index.ts';
import { credentialsFingerprint, parsePrivateKey, signJwt } from './jwt.ts';
import { providerCodes, providerState } from './provider-http.ts';

export interface ApnsCredentials {
  team_id: string;
  key_id: string;
  bundle_id: string;
  environment: 'sandbox' | 'production';
  private_key: string;
}

const TOKEN_LIFETIME_MS = 50 * 60 * 1000;
const REQUEST_TIMEOUT_MS = 15_000;

function providerToken(runtime: Runtime, creds: ApnsCredentials, renew = false): string {
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

function session(runtime: Runtime, origin: string): ClientHttp2Session {
  const state = providerState(runtime);
  const existing = sessions.get(runtime)?.get(origin);
  if (existing && !existing.closed && !existing.destroyed) return existing;
  const created = connect(origin, state.ca ? { ca: state.ca } : {});
  created.on('error', () => undefined); // surfaced through the request; a dead session is replaced next time
  created.on('close', () => {
    if (sessions.get(runtime)?.get(origin) === created) sessions.get(runtime)!.delete(origin);
  });
  created.setTimeout(5 * 60_000, () => created.close());
  created.unref();
  let perRuntime = sessions.get(runtime);
  if (!perRuntime) {
    perRuntime = new Map();
    sessions.set(runtime, perRuntime);
  }
  perRuntime.set(origin, created);
  state.closers.set(`apns:${origin}`, () => {
    for (const s of sessions.get(runtime)?.values() ?? []) s.destroy();
    sessions.get(runtime)?.clear();
  });
  return created;
}

const sessions = new WeakMap<Runtime, Map<string, ClientHttp2Session>>();

function post(client: ClientHttp2Session, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; apnsId?: string; text: string }> {
  return new Promise((resolve, reject) => {
    client.ref();
    const req = client.request({ [constants.HTTP2_HEADER_METHOD]: 'POST', [constants.HTTP2_HEADER_PATH]: path, ...headers });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.close(constants.NGHTTP2_CANCEL));
    let status = 0;
    let apnsId: string | undefined;
    const chunks: Buffer[] = [];
    req.on('response', (h) => {
      status = Number(h[constants.HTTP2_HEADER_STATUS] ?? 0);
      apnsId = typeof h['apns-id'] === 'string' ? h['apns-id'] : undefined;
    });
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      client.unref();
      resolve({ status, apnsId, text: Buffer.concat(chunks).toString('utf8') });
    });
    req.on('error', (error) => {
      client.unref();
      reject(error);
    });
    req.on('close', () => {
      if (status === 0) {
        client.unref();
        reject(new Error('stream closed without a response'));
      }
    });
    req.end(body);
  });
}

export function apnsPayload(message: PushMessage): string {
  return JSON.stringify({
    aps: { alert: { title: message.title, body: message.body }, sound: 'default' },
    ...(message.data ? { data: message.data } : {}),
    ...(message.action_url ? { action_url: message.action_url } : {}),
  });
}

export async function sendApns(runtime: Runtime, creds: ApnsCredentials, token: string, message: PushMessage): Promise<PushOutcome> {
  if (!/^[0-9A-Fa-f]{32,200}$/.test(token)) return { status: 'dead', error: 'not an APNs device token' };
  const providers = runtime.config.providers;
  const origin = new URL(creds.environment === 'sandbox' ? providers.apnsSandboxUrl : providers.apnsProductionUrl).origin;
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
      answer = await post(
        session(runtime, origin),
        `/3/device/${token}`,
        {
          authorization: `bearer ${jwt}`,
          'apns-topic': creds.bundle_id,
          'apns-push-type': 'alert',
          'apns-priority': '10',
          'content-type': 'application/json',
        },
        body,
      );
    } catch (error) {
      return { status: 'failed', error: `APNs unreachable: ${(error as Error).message}`, retryable: true };
    }
    if (answer.status === 200) return { status: 'sent', providerMessageId: answer.apnsId };
    const reason = providerCodes(answer.text)[0] ?? '';
    const error = `APNs ${answer.status}${reason ? ` ${reason}` : ''}`;
    if (answer.status === 410 || reason === 'Unregistered' || reason === 'BadDeviceToken' || reason === 'DeviceTokenNotForTopic') return { status: 'dead', error };
    // A token Apple considers expired is signed again once, right away.
    if (answer.status === 403 && reason === 'ExpiredProviderToken' && attempt === 0) continue;
    return { status: 'failed', error, retryable: answer.status === 429 || answer.status >= 500 };
  }
  return { status: 'failed', error: 'APNs refused the provider token', retryable: true };
}

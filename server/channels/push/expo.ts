// Expo push service: POST {expoUrl}/--/api/v2/push/send with the Expo push token; the optional access
// token is required only when the Expo project enforces "enhanced push security".
import type { Context } from '../../base/context.ts';
import type { PushMessage, PushOutcome } from './messages.ts';
import { describeAnswer, errorCode, providerRequest } from '../provider-http.ts';

export interface ExpoCredentials {
  access_token?: string | null;
}

interface ExpoTicket {
  status?: 'ok' | 'error';
  id?: string;
  message?: string;
  details?: { error?: string };
}

export async function sendExpo(
  runtime: Context,
  creds: ExpoCredentials,
  token: string,
  message: PushMessage,
): Promise<PushOutcome> {
  const url = `${runtime.config.providers.expoUrl.replace(/\/+$/, '')}/--/api/v2/push/send`;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (creds.access_token) headers.authorization = `Bearer ${creds.access_token}`;
  let answer;
  try {
    answer = await providerRequest(runtime, url, {
      headers,
      body: JSON.stringify([
        {
          to: token,
          title: message.title,
          body: message.body,
          data: { ...message.data, ...(message.action_url ? { action_url: message.action_url } : {}) },
        },
      ]),
    });
  } catch (error) {
    return { status: 'failed', error: `Expo unreachable: ${(error as Error).message}`, retryable: true };
  }
  if (answer.status !== 200)
    return {
      status: 'failed',
      error: `Expo ${describeAnswer(answer)}`,
      retryable: answer.status === 429 || answer.status >= 500,
    };
  let ticket: ExpoTicket | undefined;
  try {
    const parsed = JSON.parse(answer.text) as { data?: ExpoTicket[] | ExpoTicket };
    ticket = Array.isArray(parsed.data) ? parsed.data[0] : parsed.data;
  } catch {
    return { status: 'failed', error: 'Expo answered with something that is not JSON', retryable: true };
  }
  if (ticket?.status === 'ok') return { status: 'sent', providerMessageId: ticket.id };
  // The ticket's code, not its message: Expo's messages quote the push token.
  const code = errorCode(ticket?.details?.error) ?? (ticket ? 'unknown' : 'no ticket');
  const error = `Expo ${code}`;
  if (code === 'DeviceNotRegistered') return { status: 'dead', error };
  return { status: 'failed', error, retryable: code === 'MessageRateExceeded' };
}

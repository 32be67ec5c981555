// Twilio's Programmable Messaging API: POST /2010-04-01/Accounts/{AccountSid}/Messages.json with HTTP
// Basic auth (account SID and auth token) and a form body; 201 answers the message resource, whose
// `sid` later names the message in status callbacks. Errors are Twilio's JSON with its numeric `code`
// (21211 invalid To, 21610 unsubscribed recipient, ...): a 400 is permanent.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Context } from '../../base/context.ts';
import { answerJson, providerRequest } from '../provider-http.ts';
import { codeOf, httpFailure, type SmsAnswer, type SmsMessage } from './answers.ts';
import { callbackUrl, type SmsCredentials } from './sms-transports.ts';

type TwilioCredentials = Extract<SmsCredentials, { provider: 'twilio' }>;

export async function sendTwilio(
  runtime: Context,
  credentials: TwilioCredentials,
  message: SmsMessage,
): Promise<SmsAnswer> {
  const sid = credentials.account_sid;
  const form = new URLSearchParams({ To: message.to, Body: message.text });
  if (credentials.messaging_service_sid) form.set('MessagingServiceSid', credentials.messaging_service_sid);
  else if (credentials.from) form.set('From', credentials.from);
  const statusCallback = callbackUrl(runtime.config, 'twilio', credentials.callback_token);
  if (statusCallback) form.set('StatusCallback', statusCallback);
  const base = runtime.config.providers.twilioUrl.replace(/\/+$/, '');
  const response = await providerRequest(
    runtime,
    `${base}/2010-04-01/Accounts/${encodeURIComponent(sid)}/Messages.json`,
    {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${sid}:${credentials.auth_token}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: form.toString(),
      timeoutMs: 15_000,
    },
  );
  const body = answerJson(response.text) as { sid?: unknown; code?: unknown } | undefined;
  if (response.status >= 200 && response.status < 300) {
    const messageSid = typeof body?.sid === 'string' && /^[A-Za-z0-9]{1,64}$/.test(body.sid) ? body.sid : null;
    return { status: 'sent', providerMessageId: messageSid };
  }
  return httpFailure(response, runtime.clock.now(), codeOf(body?.code));
}

/**
 * Twilio's request signature: base64 HMAC-SHA1, keyed with the auth token, over the full URL Twilio
 * called followed by every POST parameter's name and value, sorted by name.
 */
export function twilioSignature(authToken: string, url: string, params: URLSearchParams): string {
  let data = url;
  const names = [...new Set(params.keys())].sort();
  for (const name of names) for (const value of params.getAll(name).sort()) data += name + value;
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

export function validTwilioSignature(
  authToken: string,
  url: string,
  params: URLSearchParams,
  header: string | null,
): boolean {
  if (!header) return false;
  const expected = Buffer.from(twilioSignature(authToken, url, params));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

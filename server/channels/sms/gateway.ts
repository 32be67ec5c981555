// The generic HTTP gateway (the long tail of regional SMS providers): the tenant's URL, method and
// secret headers, and its JSON body template filled with the number and the text. The URL is the
// tenant's: it goes through the SSRF guard unless allowPrivateWebhookUrls. 2xx is sent (the message
// id read from `message_id_path` when set), 429 and 5xx retryable, any other 4xx permanent.
import type { Context } from '../../base/context.ts';
import { NonPublicAddressError } from '../../base/net/public-address.ts';
import { answerJson, providerRequest } from '../provider-http.ts';
import { failure, httpFailure, type SmsAnswer, type SmsMessage } from './answers.ts';
import { renderBodyTemplate } from './body-template.ts';
import type { SmsCredentials } from './sms-transports.ts';

type GatewayCredentials = Extract<SmsCredentials, { provider: 'http' }>;

export async function sendGateway(
  runtime: Context,
  credentials: GatewayCredentials,
  message: SmsMessage,
): Promise<SmsAnswer> {
  let response;
  try {
    response = await providerRequest(runtime, credentials.url, {
      method: credentials.method,
      headers: { ...credentials.headers, 'content-type': 'application/json', accept: 'application/json' },
      body: renderBodyTemplate(credentials.body, { to: message.to, text: message.text }),
      timeoutMs: 15_000,
      publicOnly: !runtime.config.allowPrivateWebhookUrls,
    });
  } catch (error) {
    if (error instanceof NonPublicAddressError)
      return failure('the gateway URL resolves to a non-public address (refused)', false);
    throw error;
  }
  if (response.status >= 200 && response.status < 300)
    return { status: 'sent', providerMessageId: messageIdAt(answerJson(response.text), credentials.message_id_path) };
  return httpFailure(response, runtime.clock.now(), null);
}

function messageIdAt(body: unknown, path: string | null): string | null {
  if (!path) return null;
  let value = body;
  for (const part of path.split('.')) {
    if (!value || typeof value !== 'object') return null;
    value = (value as Record<string, unknown>)[part];
  }
  const text = typeof value === 'number' ? String(value) : value;
  return typeof text === 'string' && text.length > 0 && text.length <= 200 ? text : null;
}

// Provider callbacks (no credential but the provider's signature): Twilio's status callbacks and
// inbound messages, Vonage's delivery receipts and inbound messages. The path's token names the
// tenant's transport; an unknown token is 404, a forged signature 403, and neither changes anything.
// A receipt moves the delivery the provider's message id names (sent -> delivered or failed); an
// inbound STOP turns the sender's `sms` off for every type (contact.unsubscribed), START back on.
import { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { defineRoute } from '../route.ts';
import { readFormBody, readJsonBody } from '../body.ts';
import { AppError } from '../../base/errors.ts';
import { publicBaseUrl } from '../../base/config.ts';
import { transportByCallbackToken } from '../../channels/sms/sms-transports.ts';
import {
  contactsWithPhone,
  parseTwilioCallback,
  parseVonageCallback,
  twilioCallbackAuthentic,
  vonageCallbackAuthentic,
  type SmsCallback,
} from '../../channels/sms/callbacks.ts';
import { recordReceipt } from '../../delivery/late-outcomes.ts';
import { preferenceMatrix, setPreference } from '../../resources/preferences.ts';

const tag = 'provider callbacks';
const TokenParams = z.object({ token: z.string().min(1).max(200) });
const CALLBACK_BYTES = 64 * 1024;
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>';

const forged = () => new AppError('forbidden', 'The callback signature is missing or wrong');
const unknownToken = () => new AppError('not_found', 'No SMS transport has this callback URL');

/** Records what a callback says in the transport's tenant. */
async function applyCallback(em: EntityManager, tenantId: string, callback: SmsCallback): Promise<void> {
  if (callback.kind === 'receipt') {
    await recordReceipt(em, tenantId, {
      channel: 'sms',
      providerMessageId: callback.providerMessageId,
      status: callback.status,
      error: callback.error,
    });
    return;
  }
  if (callback.kind !== 'inbound' || !callback.action) return;
  const enabled = callback.action === 'start';
  for (const contactId of await contactsWithPhone(em, tenantId, callback.from)) {
    const types = new Set((await preferenceMatrix(em, tenantId, contactId)).map((entry) => entry.type));
    for (const type of types)
      await setPreference(em, tenantId, contactId, { type, channel: 'sms', enabled }, 'sms_reply');
  }
}

export const twilioCallback = defineRoute({
  method: 'POST',
  path: '/callbacks/twilio/:token',
  summary:
    "Twilio's status callbacks (delivered, failed, undelivered) and inbound messages (STOP/START), signed with X-Twilio-Signature",
  tag,
  auth: 'public',
  params: TokenParams,
  headers: [
    { name: 'X-Twilio-Signature', description: "Twilio's HMAC-SHA1 of the URL and parameters", required: true },
  ],
  produces: 'text/xml',
  responses: { 200: z.string().meta({ description: 'Empty TwiML (inbound messages)' }), 204: null },
  errors: [403, 404, 413, 415],
  handler: async ({ runtime, em, params, event }) => {
    const found = await transportByCallbackToken(runtime, em, 'twilio', params.token);
    if (!found) throw unknownToken();
    const form = await readFormBody(event.req, CALLBACK_BYTES, runtime.config.requestBodyTimeoutMs);
    // Twilio signs the URL it called: the one Herald gave it, under the public URL.
    const url = `${publicBaseUrl(runtime.config)}${event.url.pathname}${event.url.search}`;
    if (!twilioCallbackAuthentic(found.transport, url, form, event.req.headers.get('x-twilio-signature')))
      throw forged();
    const callback = parseTwilioCallback(form);
    await applyCallback(em, found.tenantId, callback);
    if (callback.kind === 'inbound')
      return new Response(EMPTY_TWIML, { status: 200, headers: { 'content-type': 'text/xml; charset=utf-8' } });
    return new Response(null, { status: 204 });
  },
});

export const vonageCallback = defineRoute({
  method: 'POST',
  path: '/callbacks/vonage/:token',
  summary:
    "Vonage's delivery receipts and inbound messages (STOP/START), JSON or form; signed when the transport has a signature secret",
  tag,
  auth: 'public',
  params: TokenParams,
  responses: { 204: null },
  errors: [403, 404, 413, 415, 422],
  handler: async ({ runtime, em, params, event }) => {
    const found = await transportByCallbackToken(runtime, em, 'vonage', params.token);
    if (!found) throw unknownToken();
    const fields = await readVonageFields(event.req, runtime.config);
    if (!vonageCallbackAuthentic(found.transport, fields, runtime.clock.now())) throw forged();
    await applyCallback(em, found.tenantId, parseVonageCallback(fields));
    return new Response(null, { status: 204 });
  },
});

/** Vonage posts JSON or a form; either way, its fields as text. */
async function readVonageFields(
  request: Request,
  config: { requestBodyTimeoutMs: number },
): Promise<Record<string, string>> {
  const type = request.headers.get('content-type') ?? '';
  if (/^application\/json\b/i.test(type)) {
    const body = await readJsonBody(request, CALLBACK_BYTES, config.requestBodyTimeoutMs);
    const fields: Record<string, string> = {};
    if (body && typeof body === 'object' && !Array.isArray(body))
      for (const [name, value] of Object.entries(body))
        if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
          fields[name] = String(value);
    return fields;
  }
  return Object.fromEntries(await readFormBody(request, CALLBACK_BYTES, config.requestBodyTimeoutMs));
}

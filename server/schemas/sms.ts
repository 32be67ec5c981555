// Request and response shapes of the SMS transports (Twilio, Vonage, a generic HTTP gateway) and
// their test sends. Secret fields (auth_token, api_secret, signature_secret, the gateway's headers)
// appear only in requests: no response schema has a place for them.
import { z } from 'zod';
import { withoutUrlCredentials } from './common.ts';
import { tenantHeaders } from './http-channel.ts';
import { SendTestOutcome } from './transports.ts';
import { normalisePhone } from './contacts.ts';

export const SMS_PROVIDERS = ['twilio', 'vonage', 'http'] as const;
export const SmsProvider = z.enum(SMS_PROVIDERS).meta({ id: 'SmsProvider' });
export type SmsProvider = z.infer<typeof SmsProvider>;

export const SmsProviderParams = z.object({ provider: SmsProvider });

/** An E.164 number, normalised (`+49 151 ...` -> `+49151...`). */
export const e164 = z
  .string()
  .trim()
  .max(64)
  .refine(
    (value) => normalisePhone(value) !== null,
    'must be a valid phone number in E.164 form, such as +4915112345678',
  )
  .transform((value) => normalisePhone(value) ?? value);

/** A sender: an E.164 number, or an alphanumeric sender id (1 to 11 letters, digits and spaces, one letter at least). */
const sender = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .refine(
    (value) => normalisePhone(value) !== null || /^(?=.*[A-Za-z])[A-Za-z0-9 ]{1,11}$/.test(value),
    'must be an E.164 number or an alphanumeric sender id of at most 11 characters',
  )
  .transform((value) => normalisePhone(value) ?? value);

const secret = (max: number) => z.string().min(1).max(max);

/** Where the transport sits in the failover order (lower first) and whether it is used at all. */
const ordering = {
  priority: z.number().int().min(0).max(1000).optional().describe('Lower is asked first; default 0'),
  enabled: z.boolean().optional().describe('Default true'),
};

/** Twilio and Vonage call back at a URL with a token of the transport's own. */
const callbackRotation = {
  rotate_callback_url: z
    .boolean()
    .optional()
    .describe('true: a new callback_url (a new token); the old one answers 404 from now on'),
};

export const TwilioSmsSettings = z
  .object({
    account_sid: z.string().regex(/^AC[0-9a-f]{32}$/, 'must be a Twilio Account SID (AC + 32 hex digits)'),
    auth_token: secret(256)
      .optional()
      .describe('write-only; required when the transport is created, kept when omitted afterwards'),
    from: sender.optional(),
    messaging_service_sid: z
      .string()
      .regex(/^MG[0-9a-f]{32}$/, 'must be a Messaging Service SID (MG + 32 hex digits)')
      .optional(),
    ...ordering,
    ...callbackRotation,
  })
  .refine((s) => s.from !== undefined || s.messaging_service_sid !== undefined, {
    message: 'give from or messaging_service_sid',
    path: ['from'],
  })
  .meta({ id: 'TwilioSmsTransportSettings' });

export const VonageSmsSettings = z
  .object({
    api_key: z.string().regex(/^[A-Za-z0-9]{1,64}$/, 'must be a Vonage API key'),
    api_secret: secret(256)
      .optional()
      .describe('write-only; required when the transport is created, kept when omitted afterwards'),
    from: sender,
    signature_secret: secret(256)
      .nullish()
      .describe(
        'write-only; when set, delivery receipts and inbound messages must carry a valid Vonage signature (md5hash). Omitted: kept; null: removed',
      ),
    ...ordering,
    ...callbackRotation,
  })
  .meta({ id: 'VonageSmsTransportSettings' });

export const HttpSmsSettings = z
  .object({
    url: z
      .string()
      .trim()
      .max(2048)
      .pipe(z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }))
      .refine(withoutUrlCredentials, { message: 'must not hold a user name or password: put credentials in headers' }),
    method: z.enum(['POST', 'PUT']).optional().describe('Default POST'),
    headers: tenantHeaders.optional().describe('write-only (they usually hold the API key); omitted: kept'),
    body: z
      .record(z.string().max(200), z.unknown())
      .refine((body) => JSON.stringify(body).length <= 20_000, 'must be at most 20000 characters as JSON')
      .describe('The JSON body: strings may hold {{ to }} (E.164) and {{ text }}, inserted JSON-escaped'),
    message_id_path: z
      .string()
      .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,9}$/, 'must be a dotted path such as data.id')
      .optional()
      .describe("Where the gateway's JSON answer holds its message id"),
    ...ordering,
  })
  .meta({ id: 'HttpSmsTransportSettings' });

export const SmsSettingsByProvider = {
  twilio: TwilioSmsSettings,
  vonage: VonageSmsSettings,
  http: HttpSmsSettings,
} as const;

// The body is checked against the path's provider in the service, for 422s that name the field the
// provider needs; this union documents the three shapes with every field optional, and takes any
// object (so that a wrong field is reported by that second check, by its name).
export const SmsTransportRequest = z
  .union([
    z.looseObject(TwilioSmsSettings.shape).partial(),
    z.looseObject(VonageSmsSettings.shape).partial(),
    z.looseObject(HttpSmsSettings.shape).partial(),
    z.looseObject({}),
  ])
  .describe(
    "TwilioSmsTransportSettings, VonageSmsTransportSettings or HttpSmsTransportSettings, by the path's provider",
  )
  .meta({ id: 'SmsTransportRequest' });

export const SmsTransportResponse = z
  .object({
    provider: SmsProvider,
    priority: z.number().int(),
    enabled: z.boolean(),
    settings: z
      .record(z.string(), z.unknown())
      .describe('The non-secret settings (the http gateway lists header_names, never their values)'),
    callback_url: z
      .string()
      .nullable()
      .describe(
        "Herald's URL for this provider's status callbacks, delivery receipts and inbound messages (Twilio and Vonage); set it as the number's inbound webhook. null for the http gateway",
      ),
    credentials_unreadable: z.boolean(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'SmsTransportResponse' });
export type SmsTransportResponse = z.infer<typeof SmsTransportResponse>;

export const SendTestSmsRequest = z
  .object({ to: e164, text: z.string().min(1).max(1600).optional() })
  .meta({ id: 'SendTestSmsRequest' });

export const SendTestSmsResponse = SendTestOutcome.meta({ id: 'SendTestSmsResponse' });
export type SendTestSmsResponse = z.infer<typeof SendTestSmsResponse>;

// Request and response shapes of the email and push transports, test sends and the web-push key.
// Secret fields (password, private_key, service_account.private_key, access_token) appear only in
// requests: no response schema has a place for them.
import { z } from 'zod';
import { PushProvider, email } from './common.ts';

const hostname = z
  .string()
  .trim()
  .min(1)
  .max(253)
  .regex(/^[A-Za-z0-9.:[\]_-]+$/, 'must be a host name or IP address');

export const EmailTransportRequest = z
  .object({
    host: hostname,
    port: z.number().int().min(1).max(65535),
    secure: z.boolean().default(false),
    username: z.string().max(256).nullish(),
    /** Write-only. Omitted: the stored password is kept; null: no password. */
    password: z.string().max(1024).nullish(),
    from_email: email,
    from_name: z.string().trim().max(200).nullish(),
  })
  .meta({ id: 'EmailTransportRequest' });
export type EmailTransportRequest = z.infer<typeof EmailTransportRequest>;

/** The install's default SMTP as a tenant sees it: where its mail goes, never the credentials. */
export const InstallDefaultSmtp = z
  .object({
    host: z.string().optional(),
    port: z.number().int().optional(),
    secure: z.boolean().optional(),
    from: z.string().optional().describe('The From address the install sends with'),
    /** The stored default's encryption key is gone: email is skipped until an operator sets it again. */
    credentials_unreadable: z.boolean(),
  })
  .meta({ id: 'InstallDefaultSmtp' });
export type InstallDefaultSmtp = z.infer<typeof InstallDefaultSmtp>;

export const EmailTransportResponse = z
  .object({
    configured: z.boolean(),
    host: z.string().optional(),
    port: z.number().int().optional(),
    secure: z.boolean().optional(),
    username: z.string().nullable().optional(),
    from_email: z.string().optional(),
    from_name: z.string().nullable().optional(),
    /** Configured, but the password's encryption key is gone: set the password again. */
    credentials_unreadable: z.boolean().optional(),
    install_default: InstallDefaultSmtp.nullable()
      .optional()
      .describe(
        "Without a transport of its own (configured false), the tenant's email goes through the install's default SMTP: which one (never its credentials); null when the install has none either, and email is skipped (no_transport)",
      ),
  })
  .meta({ id: 'EmailTransportResponse' });
export type EmailTransportResponse = z.infer<typeof EmailTransportResponse>;

export const SendTestEmailRequest = z.object({ to: email }).meta({ id: 'SendTestEmailRequest' });

/** A test send's outcome: the server's answer, or why there was none (every transport's test route). */
export const SendTestOutcome = z.object({
  ok: z.boolean(),
  message_id: z.string().optional(),
  error: z.string().optional(),
});
export type SendTestResult = z.infer<typeof SendTestOutcome>;

export const SendTestEmailResponse = SendTestOutcome.extend({
  transport: z
    .enum(['tenant', 'install_default'])
    .describe("The SMTP the test went through: the tenant's own, else the install's default"),
}).meta({ id: 'SendTestEmailResponse' });
export type SendTestEmailResult = z.infer<typeof SendTestEmailResponse>;

// Push providers: each provider's own fields, validated against the path's provider.
export const ApnsSettings = z
  .object({
    team_id: z.string().regex(/^[A-Z0-9]{10}$/, 'must be the 10-character Apple team id'),
    key_id: z.string().regex(/^[A-Z0-9]{10}$/, 'must be the 10-character key id of the .p8 key'),
    private_key: z.string().min(1).max(10_000).describe('the .p8 key (PEM); write-only'),
    bundle_id: z.string().regex(/^[A-Za-z0-9.-]{1,155}$/, 'must be the app bundle id (apns-topic)'),
    environment: z.enum(['sandbox', 'production']).default('production'),
  })
  .meta({ id: 'ApnsTransportSettings' });

export const FcmServiceAccount = z.looseObject({
  type: z.string().optional(),
  project_id: z.string().regex(/^[a-z0-9-]{1,64}$/, 'must be a Firebase project id'),
  client_email: z.string().min(3).max(320),
  private_key: z.string().min(1).max(10_000).describe('write-only'),
  private_key_id: z.string().max(200).optional(),
  // Only Google's own token endpoints: a tenant-supplied URL would make Herald post to any host.
  // An install points FCM elsewhere with config.providers.fcmTokenUrl instead.
  token_uri: z
    .url({
      protocol: /^https$/,
      hostname: /^([a-z0-9-]+\.)*googleapis\.com$/,
      error: 'must be a googleapis.com token endpoint',
    })
    .optional(),
});

export const FcmSettings = z.object({ service_account: FcmServiceAccount }).meta({ id: 'FcmTransportSettings' });

export const ExpoSettings = z
  .object({ access_token: z.string().min(1).max(1000).nullish().describe('write-only') })
  .meta({ id: 'ExpoTransportSettings' });

export const WebPushSettings = z
  .object({
    subject: z
      .string()
      .max(500)
      .refine(
        (s) => /^mailto:[^@\s]+@[^@\s]+$/.test(s) || /^https:\/\/[^\s]+$/.test(s),
        'must be a mailto: or https: URL',
      ),
    public_key: z
      .string()
      .regex(/^[A-Za-z0-9_-]{86,88}={0,2}$/, 'must be a base64url P-256 public key')
      .optional(),
    private_key: z
      .string()
      .regex(/^[A-Za-z0-9_-]{42,44}={0,2}$/, 'must be a base64url P-256 private key')
      .optional()
      .describe('write-only'),
  })
  .meta({ id: 'WebPushTransportSettings' });

export const PushSettingsByProvider = {
  apns: ApnsSettings,
  fcm: FcmSettings,
  expo: ExpoSettings,
  webpush: WebPushSettings,
} as const;

// The body is checked against the path's provider in the service (precise 422 locations); this
// union documents the four shapes. Loose objects keep every field for that second check.
export const PushTransportRequest = z
  .union([ApnsSettings.loose(), FcmSettings.loose(), WebPushSettings.loose(), ExpoSettings.loose()])
  .meta({ id: 'PushTransportRequest' });

export const PushTransportResponse = z
  .object({
    provider: PushProvider,
    settings: z.record(z.string(), z.unknown()),
    credentials_unreadable: z.boolean(),
    updated_at: z.string(),
  })
  .meta({ id: 'PushTransportResponse' });
export type PushTransportResponse = z.infer<typeof PushTransportResponse>;

export const PushProviderParams = z.object({ provider: PushProvider });

export const WebPushSubscription = z
  .object({
    endpoint: z.url({ protocol: /^https$/, error: 'must be an https URL' }).max(2048),
    keys: z.object({
      p256dh: z.string().regex(/^[A-Za-z0-9_-]{86,88}={0,2}$/, 'must be a base64url P-256 public key'),
      auth: z.string().regex(/^[A-Za-z0-9_-]{22,24}={0,2}$/, 'must be a base64url 16-byte secret'),
    }),
  })
  .meta({ id: 'WebPushSubscription' });

export const SendTestPushRequest = z
  .object({
    token: z.string().min(1).max(4096).optional(),
    subscription: WebPushSubscription.optional(),
    title: z.string().max(200).optional(),
    body: z.string().max(2000).optional(),
  })
  .meta({ id: 'SendTestPushRequest' });

export const SendTestPushResponse = SendTestOutcome.meta({ id: 'SendTestPushResponse' });

export const WebPushPublicKeyResponse = z
  .object({ public_key: z.string().min(1) })
  .meta({ id: 'WebPushPublicKeyResponse' });

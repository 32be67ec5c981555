// Request and response shapes of the chat channel: a contact's chat destinations (a person or a team
// channel on one provider) and the tenant's chat bot transports. A webhook URL and a bot token appear
// only in requests: responses carry the URL's hint and never the token.
import { z } from 'zod';
import { SendTestOutcome } from './transports.ts';
import { isoDateTime } from './common.ts';
import { uuidParam } from './contacts.ts';

export const CHAT_PROVIDERS = ['slack', 'teams', 'discord', 'telegram', 'mattermost', 'google_chat'] as const;
export const ChatProvider = z.enum(CHAT_PROVIDERS).meta({ id: 'ChatProvider' });
export type ChatProvider = z.infer<typeof ChatProvider>;

/** Providers whose destinations are a channel or chat id reached with the tenant's bot token. */
export const ChatTransportProvider = z.enum(['slack', 'telegram']).meta({ id: 'ChatTransportProvider' });
export type ChatTransportProvider = z.infer<typeof ChatTransportProvider>;

const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

/** https, or http on a loopback host (local development and test peers; still refused as private unless allowed). */
const webhookUrl = z
  .string()
  .trim()
  .max(2048)
  .refine((value) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return false;
    }
    if (url.username || url.password) return false;
    if (url.protocol === 'https:') return true;
    return url.protocol === 'http:' && LOOPBACK_HOSTS.includes(url.hostname);
  }, 'must be an https URL');

/** A Slack channel or user id (C…, G…, U…, W…), or a channel name. */
const slackChannel = z
  .string()
  .trim()
  .regex(/^#?[A-Za-z0-9._-]{1,80}$/, 'must be a Slack channel or user id such as C0123456789');

/** A Telegram chat id (an integer, negative for groups) or a public @channel name. */
const telegramChatId = z
  .union([z.string(), z.number().int()])
  .transform((v) => String(v).trim())
  .pipe(
    z.string().regex(/^(-?\d{1,20}|@[A-Za-z][A-Za-z0-9_]{4,31})$/, 'must be a Telegram chat id such as -1001234567890'),
  );

export const CreateChatDestinationRequest = z
  .object({
    provider: ChatProvider,
    webhook_url: webhookUrl.optional().describe('write-only: the incoming webhook URL (a credential)'),
    channel: slackChannel.optional().describe("slack only: a channel or user id, posted to with the tenant's bot"),
    chat_id: telegramChatId.optional().describe("telegram only: the chat id the tenant's bot sends to"),
    label: z.string().trim().max(200).optional(),
  })
  .meta({ id: 'CreateChatDestinationRequest' });
export type CreateChatDestinationRequest = z.infer<typeof CreateChatDestinationRequest>;

export const ChatDestinationResponse = z
  .object({
    id: z.string(),
    provider: ChatProvider,
    label: z.string().nullable(),
    webhook_url_hint: z
      .string()
      .nullable()
      .describe('The webhook URL as origin and its last characters (https://hooks.slack.com/.../XYZW); never whole'),
    channel: z.string().nullable(),
    chat_id: z.string().nullable(),
    created_at: isoDateTime,
  })
  .meta({ id: 'ChatDestinationResponse' });
export type ChatDestinationResponse = z.infer<typeof ChatDestinationResponse>;

export const ChatDestinationParams = z.object({ id: uuidParam, destination_id: uuidParam });

export const ChatTransportRequest = z
  .object({
    bot_token: z
      .string()
      .trim()
      .min(1)
      .max(512)
      .optional()
      .describe('write-only; required the first time, omitted: the stored token is kept'),
    priority: z.number().int().min(0).max(1000).optional().describe('lower first; 0 when first set'),
    enabled: z.boolean().optional().describe('true when first set'),
  })
  .meta({ id: 'ChatTransportRequest' });
export type ChatTransportRequest = z.infer<typeof ChatTransportRequest>;

export const ChatTransportResponse = z
  .object({
    provider: ChatTransportProvider,
    priority: z.number().int(),
    enabled: z.boolean(),
    settings: z.record(z.string(), z.unknown()),
    /** The token's encryption key is gone: set the token again. */
    credentials_unreadable: z.boolean(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'ChatTransportResponse' });
export type ChatTransportResponse = z.infer<typeof ChatTransportResponse>;

export const ChatTransportParams = z.object({ provider: ChatTransportProvider });

export const TestChatTransportRequest = z
  .object({
    channel: slackChannel.optional().describe('slack: the channel or user id to post to'),
    chat_id: telegramChatId.optional().describe('telegram: the chat id to send to'),
    text: z.string().max(2000).optional(),
  })
  .meta({ id: 'TestChatTransportRequest' });
export type TestChatTransportRequest = z.infer<typeof TestChatTransportRequest>;

export const TestChatTransportResponse = SendTestOutcome.meta({ id: 'TestChatTransportResponse' });
export type TestChatTransportResponse = z.infer<typeof TestChatTransportResponse>;

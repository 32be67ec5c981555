// A tenant's chat transports: the bot tokens that reach a channel or chat id (Slack's chat.postMessage,
// Telegram's sendMessage), one per provider, with a place in the order (priority, lower first) and an
// on/off switch. The token is encrypted, bound to the tenant and provider, and never returned; a row
// whose token cannot be decrypted is listed with credentials_unreadable. Destinations with a webhook
// URL need no transport.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context } from '../../base/context.ts';
import { chatTransportSecretsAad } from '../../base/crypto/aad.ts';
import { isUnreadable } from '../../base/crypto/keyring.ts';
import { execute, query, queryOne } from '../../base/db/sql.ts';
import { AppError, invalidField } from '../../base/errors.ts';
import { toIsoTimestamp } from '../../base/timestamps.ts';
import type {
  ChatTransportProvider,
  ChatTransportRequest,
  ChatTransportResponse,
  TestChatTransportRequest,
  TestChatTransportResponse,
} from '../../schemas/chat.ts';
import { sendSlackBot, sendTelegram } from './providers.ts';

interface ChatTransportRow {
  provider: ChatTransportProvider;
  priority: number;
  enabled: boolean;
  settings: Record<string, unknown>;
  secrets_ciphertext: string;
  created_at: Date;
  updated_at: Date;
}

export type LoadedChatTransport =
  { state: 'ready'; botToken: string; enabled: boolean } | { state: 'unreadable'; enabled: boolean };

const ROW_COLUMNS = 'provider, priority, enabled, settings, secrets_ciphertext, created_at, updated_at';
/** The tenant's transports, or ($2) the one of a provider. */
const FIND_TRANSPORTS = `SELECT ${ROW_COLUMNS} FROM chat_transports
      WHERE tenant_id = $1 AND ($2::text IS NULL OR provider = $2) ORDER BY priority, provider`;
/** $5, $6 null keep the stored priority and switch (or the defaults, 0 and on). */
const PUT_TRANSPORT = `INSERT INTO chat_transports (tenant_id, provider, settings, secrets_ciphertext, priority, enabled)
     VALUES ($1, $2, $3::jsonb, $4, coalesce($5, 0), coalesce($6, true))
     ON CONFLICT (tenant_id, provider) DO UPDATE
       SET settings = EXCLUDED.settings,
           secrets_ciphertext = EXCLUDED.secrets_ciphertext,
           priority = coalesce($5, chat_transports.priority),
           enabled = coalesce($6, chat_transports.enabled),
           updated_at = now()
     RETURNING ${ROW_COLUMNS}`;
/** A PUT without a token: the stored one is kept; $3, $4 null keep priority and switch. */
const UPDATE_TRANSPORT = `UPDATE chat_transports
       SET priority = coalesce($3, priority), enabled = coalesce($4, enabled), updated_at = now()
     WHERE tenant_id = $1 AND provider = $2
     RETURNING ${ROW_COLUMNS}`;
const DELETE_TRANSPORT = `DELETE FROM chat_transports WHERE tenant_id = $1 AND provider = $2`;

const TOKEN_SHAPES: Record<ChatTransportProvider, { pattern: RegExp; what: string }> = {
  slack: { pattern: /^xox[bp]-[A-Za-z0-9-]{10,}$/, what: 'must be a Slack bot token (xoxb-...)' },
  telegram: { pattern: /^\d{3,20}:[A-Za-z0-9_-]{30,}$/, what: 'must be a Telegram bot token (123456:ABC...)' },
};

function decryptToken(runtime: Context, tenantId: string, row: ChatTransportRow): string | 'unreadable' {
  try {
    const secrets = JSON.parse(
      runtime.keyRing.decrypt(row.secrets_ciphertext, chatTransportSecretsAad(tenantId, row.provider)),
    ) as { bot_token: string };
    return secrets.bot_token;
  } catch (error) {
    if (isUnreadable(error)) return 'unreadable';
    throw error;
  }
}

function toResponse(row: ChatTransportRow, unreadable: boolean): ChatTransportResponse {
  return {
    provider: row.provider,
    priority: row.priority,
    enabled: row.enabled,
    settings: row.settings,
    credentials_unreadable: unreadable,
    created_at: toIsoTimestamp(row.created_at),
    updated_at: toIsoTimestamp(row.updated_at),
  };
}

export async function listChatTransports(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
): Promise<ChatTransportResponse[]> {
  const rows = await query<ChatTransportRow>(em, FIND_TRANSPORTS, [tenantId, null]);
  return rows.map((row) => toResponse(row, decryptToken(runtime, tenantId, row) === 'unreadable'));
}

/** Settings shown beside the entry: what a token says of itself in public (a Telegram bot's id). */
function settingsOf(provider: ChatTransportProvider, token: string): Record<string, unknown> {
  return provider === 'telegram' ? { bot_id: token.split(':')[0] } : {};
}

export async function putChatTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  provider: ChatTransportProvider,
  input: ChatTransportRequest,
): Promise<ChatTransportResponse> {
  if (input.bot_token === undefined) {
    const row = await queryOne<ChatTransportRow>(em, UPDATE_TRANSPORT, [
      tenantId,
      provider,
      input.priority ?? null,
      input.enabled ?? null,
    ]);
    if (!row) throw invalidField(['body', 'bot_token'], `the first ${provider} transport needs its bot_token`);
    return toResponse(row, decryptToken(runtime, tenantId, row) === 'unreadable');
  }
  const shape = TOKEN_SHAPES[provider];
  if (!shape.pattern.test(input.bot_token)) throw invalidField(['body', 'bot_token'], shape.what);
  const ciphertext = runtime.keyRing.encrypt(
    JSON.stringify({ bot_token: input.bot_token }),
    chatTransportSecretsAad(tenantId, provider),
  );
  const row = await queryOne<ChatTransportRow>(em, PUT_TRANSPORT, [
    tenantId,
    provider,
    JSON.stringify(settingsOf(provider, input.bot_token)),
    ciphertext,
    input.priority ?? null,
    input.enabled ?? null,
  ]);
  return toResponse(row!, false);
}

export async function deleteChatTransport(
  em: EntityManager,
  tenantId: string,
  provider: ChatTransportProvider,
): Promise<void> {
  await execute(em, DELETE_TRANSPORT, [tenantId, provider]);
}

/** The provider's bot token; null when the tenant has no such transport. */
export async function loadChatTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  provider: ChatTransportProvider,
): Promise<LoadedChatTransport | null> {
  const [row] = await query<ChatTransportRow>(em, FIND_TRANSPORTS, [tenantId, provider]);
  if (!row) return null;
  const token = decryptToken(runtime, tenantId, row);
  return token === 'unreadable'
    ? { state: 'unreadable', enabled: row.enabled }
    : { state: 'ready', botToken: token, enabled: row.enabled };
}

/** Sends a test message with the provider's bot and reports the provider's answer. */
export async function testChatTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  provider: ChatTransportProvider,
  input: TestChatTransportRequest,
): Promise<TestChatTransportResponse> {
  if (provider === 'slack' && !input.channel)
    throw invalidField(['body', 'channel'], 'a slack test needs the channel or user id to post to');
  if (provider === 'telegram' && !input.chat_id)
    throw invalidField(['body', 'chat_id'], 'a telegram test needs the chat_id to send to');
  const loaded = await loadChatTransport(runtime, em, tenantId, provider);
  if (!loaded) throw new AppError('not_configured', `No ${provider} chat transport is configured for this tenant`);
  if (loaded.state === 'unreadable')
    return {
      ok: false,
      error:
        'credentials_unreadable: the bot token was encrypted with a key that is no longer in the key ring; set it again',
    };
  const message = {
    title: 'Herald test message',
    body: input.text ?? `Your ${provider} chat transport works.`,
    action_url: null,
  };
  let answer;
  try {
    answer =
      provider === 'slack'
        ? await sendSlackBot(runtime, loaded.botToken, input.channel!, message)
        : await sendTelegram(runtime, loaded.botToken, input.chat_id!, message);
  } catch (error) {
    // Unreachable or too slow: the test's answer, not a 500.
    return { ok: false, error: `${provider} unreachable: ${(error as Error).message}` };
  }
  if (answer.status === 'sent') return { ok: true, message_id: answer.providerMessageId ?? '' };
  return { ok: false, error: answer.error };
}

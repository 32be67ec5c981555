// SMS transports: one per tenant and provider, asked in priority order (lower first). Non-secret
// settings are stored as JSON and returned; the secret fields and the callback token are encrypted
// together (one ciphertext bound to the row) and never returned, but the callback URL built from the
// token is: the tenant sets it as its number's inbound webhook. The token is found by its SHA-256
// hash. A row whose ciphertext cannot be decrypted is listed with credentials_unreadable.
import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { execute, query, queryOne } from '../../base/db/sql.ts';
import { AppError, ValidationFailure, invalidField, notFound } from '../../base/errors.ts';
import { issuesOf } from '../../base/validation.ts';
import { publicBaseUrl } from '../../base/config.ts';
import type { Context } from '../../base/context.ts';
import { smsTransportSecretsAad } from '../../base/crypto/aad.ts';
import { isUnreadable } from '../../base/crypto/keyring.ts';
import { assertPublicHost, NonPublicAddressError } from '../../base/net/public-address.ts';
import { toIsoTimestamp } from '../../base/timestamps.ts';
import { SmsSettingsByProvider, type SmsProvider, type SmsTransportResponse } from '../../schemas/sms.ts';
import { templatePlaceholders } from './body-template.ts';

/** A provider's settings and decrypted secrets together: what a send needs. */
export type SmsCredentials =
  | {
      provider: 'twilio';
      account_sid: string;
      auth_token: string;
      from: string | null;
      messaging_service_sid: string | null;
      callback_token: string;
    }
  | {
      provider: 'vonage';
      api_key: string;
      api_secret: string;
      from: string;
      signature_secret: string | null;
      callback_token: string;
    }
  | {
      provider: 'http';
      url: string;
      method: 'POST' | 'PUT';
      headers: Record<string, string>;
      body: Record<string, unknown>;
      message_id_path: string | null;
      callback_token: string;
    };

export interface SmsTransportRow {
  tenant_id: string;
  provider: SmsProvider;
  priority: number;
  enabled: boolean;
  settings: Record<string, unknown>;
  secrets_ciphertext: string | null;
  created_at: Date;
  updated_at: Date;
}

export type LoadedSmsTransport =
  | { provider: SmsProvider; priority: number; state: 'ready'; credentials: SmsCredentials }
  | { provider: SmsProvider; priority: number; state: 'unreadable' };

const COLUMNS = 'tenant_id, provider, priority, enabled, settings, secrets_ciphertext, created_at, updated_at';
/** The tenant's transports in the order they are asked, or ($2) the one of a provider. */
const FIND_TRANSPORTS = `SELECT ${COLUMNS} FROM sms_transports
  WHERE tenant_id = $1 AND ($2::text IS NULL OR provider = $2) ORDER BY priority, provider`;
const ENABLED_TRANSPORTS = `SELECT ${COLUMNS} FROM sms_transports
  WHERE tenant_id = $1 AND enabled ORDER BY priority, provider`;
const TRANSPORT_BY_TOKEN = `SELECT ${COLUMNS} FROM sms_transports WHERE callback_token_hash = $1 AND provider = $2`;
const PUT_TRANSPORT = `INSERT INTO sms_transports
       (tenant_id, provider, priority, enabled, settings, secrets_ciphertext, callback_token_hash)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)
     ON CONFLICT (tenant_id, provider) DO UPDATE
       SET priority = EXCLUDED.priority, enabled = EXCLUDED.enabled, settings = EXCLUDED.settings,
           secrets_ciphertext = EXCLUDED.secrets_ciphertext, callback_token_hash = EXCLUDED.callback_token_hash,
           updated_at = now()
     RETURNING ${COLUMNS}`;
const DELETE_TRANSPORT = `DELETE FROM sms_transports WHERE tenant_id = $1 AND provider = $2`;

export function callbackTokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The URL a provider calls back (status callbacks, receipts, inbound); null for the http gateway. */
export function callbackUrl(config: Context['config'], provider: SmsProvider, token: string): string | null {
  if (provider === 'http') return null;
  return `${publicBaseUrl(config)}/callbacks/${provider}/${token}`;
}

function decryptSecrets(runtime: Context, row: SmsTransportRow): Record<string, unknown> | 'unreadable' {
  if (!row.secrets_ciphertext) return {};
  try {
    return JSON.parse(
      runtime.keyRing.decrypt(row.secrets_ciphertext, smsTransportSecretsAad(row.tenant_id, row.provider)),
    ) as Record<string, unknown>;
  } catch (error) {
    if (isUnreadable(error)) return 'unreadable';
    throw error;
  }
}

export function loadedTransport(runtime: Context, row: SmsTransportRow): LoadedSmsTransport {
  const secrets = decryptSecrets(runtime, row);
  if (secrets === 'unreadable') return { provider: row.provider, priority: row.priority, state: 'unreadable' };
  return {
    provider: row.provider,
    priority: row.priority,
    state: 'ready',
    credentials: { provider: row.provider, ...row.settings, ...secrets } as SmsCredentials,
  };
}

/** The tenant's enabled transports, in the order a delivery asks them. */
export async function loadEnabledSmsTransports(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
): Promise<LoadedSmsTransport[]> {
  const rows = await query<SmsTransportRow>(em, ENABLED_TRANSPORTS, [tenantId]);
  return rows.map((row) => loadedTransport(runtime, row));
}

/** The transport a callback URL's token names, with its tenant; null for an unknown token. */
export async function transportByCallbackToken(
  runtime: Context,
  em: EntityManager,
  provider: SmsProvider,
  token: string,
): Promise<{ tenantId: string; transport: LoadedSmsTransport } | null> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return null;
  const row = await queryOne<SmsTransportRow>(em, TRANSPORT_BY_TOKEN, [callbackTokenHash(token), provider]);
  return row ? { tenantId: row.tenant_id, transport: loadedTransport(runtime, row) } : null;
}

function toResponse(runtime: Context, row: SmsTransportRow): SmsTransportResponse {
  const loaded = loadedTransport(runtime, row);
  return {
    provider: row.provider,
    priority: row.priority,
    enabled: row.enabled,
    settings: row.settings,
    callback_url:
      loaded.state === 'ready' ? callbackUrl(runtime.config, row.provider, loaded.credentials.callback_token) : null,
    credentials_unreadable: loaded.state === 'unreadable',
    created_at: toIsoTimestamp(row.created_at),
    updated_at: toIsoTimestamp(row.updated_at),
  };
}

export async function listSmsTransports(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
): Promise<SmsTransportResponse[]> {
  const rows = await query<SmsTransportRow>(em, FIND_TRANSPORTS, [tenantId, null]);
  return rows.map((row) => toResponse(runtime, row));
}

function parseSettings<P extends SmsProvider>(provider: P, body: unknown): z.infer<(typeof SmsSettingsByProvider)[P]> {
  const result = SmsSettingsByProvider[provider].safeParse(body);
  if (!result.success) throw new ValidationFailure(issuesOf('body', result.error));
  return result.data as z.infer<(typeof SmsSettingsByProvider)[P]>;
}

/** A secret the request must give when nothing is stored yet, else the stored one is kept. */
function kept(given: string | undefined, stored: unknown, field: string): string {
  if (given !== undefined) return given;
  if (typeof stored === 'string') return stored;
  throw invalidField(['body', field], 'is required');
}

/** Splits a validated request into stored settings and secret fields (the stored secrets fill omitted ones). */
function splitSettings(
  runtime: Context,
  provider: SmsProvider,
  body: unknown,
  stored: Record<string, unknown>,
): { settings: Record<string, unknown>; secrets: Record<string, unknown>; priority?: number; enabled?: boolean } {
  switch (provider) {
    case 'twilio': {
      const s = parseSettings('twilio', body);
      return {
        settings: {
          account_sid: s.account_sid,
          from: s.from ?? null,
          messaging_service_sid: s.messaging_service_sid ?? null,
        },
        secrets: { auth_token: kept(s.auth_token, stored.auth_token, 'auth_token') },
        priority: s.priority,
        enabled: s.enabled,
      };
    }
    case 'vonage': {
      const s = parseSettings('vonage', body);
      const signatureSecret = s.signature_secret === undefined ? (stored.signature_secret ?? null) : s.signature_secret;
      return {
        settings: { api_key: s.api_key, from: s.from, signed_callbacks: signatureSecret !== null },
        secrets: {
          api_secret: kept(s.api_secret, stored.api_secret, 'api_secret'),
          signature_secret: signatureSecret,
        },
        priority: s.priority,
        enabled: s.enabled,
      };
    }
    case 'http': {
      const s = parseSettings('http', body);
      if (!runtime.config.allowPrivateWebhookUrls) {
        try {
          assertPublicHost(new URL(s.url));
        } catch (error) {
          if (error instanceof NonPublicAddressError)
            throw invalidField(['body', 'url'], 'must be a public address (private addresses are refused)');
          throw error;
        }
      }
      const unknown = templatePlaceholders(s.body).filter((name) => name !== 'to' && name !== 'text');
      if (unknown.length > 0)
        throw invalidField(['body', 'body'], `unknown placeholder {{ ${unknown[0]} }}: only {{ to }} and {{ text }}`);
      const headers = s.headers ?? (stored.headers as Record<string, string> | undefined) ?? {};
      return {
        settings: {
          url: s.url,
          method: s.method ?? 'POST',
          header_names: Object.keys(headers).sort(),
          body: s.body,
          message_id_path: s.message_id_path ?? null,
        },
        secrets: { headers },
        priority: s.priority,
        enabled: s.enabled,
      };
    }
  }
}

export async function putSmsTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  provider: SmsProvider,
  body: unknown,
): Promise<SmsTransportResponse> {
  const [current] = await query<SmsTransportRow>(em, FIND_TRANSPORTS, [tenantId, provider]);
  const stored = current ? decryptSecrets(runtime, current) : {};
  const readable = stored === 'unreadable' ? {} : stored;
  const { settings, secrets, priority, enabled } = splitSettings(runtime, provider, body, readable);
  // The callback token outlives a change of credentials: the provider's console keeps the URL. It is
  // replaced only when asked (a URL that leaked; for an unsigned Vonage account it is the credential).
  const rotate = provider !== 'http' && (body as { rotate_callback_url?: unknown }).rotate_callback_url === true;
  const token =
    typeof readable.callback_token === 'string' && !rotate
      ? readable.callback_token
      : randomBytes(24).toString('base64url');
  const ciphertext = runtime.keyRing.encrypt(
    JSON.stringify({ ...secrets, callback_token: token }),
    smsTransportSecretsAad(tenantId, provider),
  );
  const row = await queryOne<SmsTransportRow>(em, PUT_TRANSPORT, [
    tenantId,
    provider,
    priority ?? current?.priority ?? 0,
    enabled ?? current?.enabled ?? true,
    JSON.stringify(settings),
    ciphertext,
    callbackTokenHash(token),
  ]);
  return toResponse(runtime, row!);
}

export async function deleteSmsTransport(em: EntityManager, tenantId: string, provider: SmsProvider): Promise<void> {
  const deleted = await execute(em, DELETE_TRANSPORT, [tenantId, provider]);
  if (deleted === 0) throw notFound(`SMS transport ${provider}`);
}

/** The tenant's transport of a provider, enabled or not (test sends); 404 when there is none. */
export async function loadSmsTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  provider: SmsProvider,
): Promise<LoadedSmsTransport> {
  const [row] = await query<SmsTransportRow>(em, FIND_TRANSPORTS, [tenantId, provider]);
  if (!row) throw new AppError('not_found', `No ${provider} SMS transport is configured for this tenant`);
  return loadedTransport(runtime, row);
}

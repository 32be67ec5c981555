// Push transports: one per tenant and provider. Non-secret settings are stored as JSON and returned;
// the provider's secret fields are encrypted together (one ciphertext bound to the row) and never
// returned. A row whose ciphertext cannot be decrypted is listed with credentials_unreadable.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { execute, queryOne } from '../../base/db/sql.ts';
import { AppError, ValidationFailure, invalidField } from '../../base/errors.ts';
import { issuesOf } from '../../base/validation.ts';
import type { Context } from '../../base/context.ts';
import type { PushProvider } from '../../schemas/common.ts';
import { PushSettingsByProvider, type PushTransportResponse, type SendTestResult } from '../../schemas/transports.ts';
import { parsePrivateKey } from './jwt.ts';
import { sendPushWith } from './providers.ts';
import type { PushDestination } from './messages.ts';
import {
  decryptPushSecrets,
  findPushTransportRows,
  loadPushTransport,
  type PushTransportRow,
} from './tenant-credentials.ts';
import { generateVapidKeys, vapidPublicKeyOf } from '../web-push/provider.ts';
import { pushTransportSecretsAad } from '../../base/crypto/aad.ts';
import { toIsoTimestamp } from '../../base/timestamps.ts';

const PUT_TRANSPORT = `INSERT INTO push_transports (tenant_id, provider, settings, secrets_ciphertext)
     VALUES ($1, $2, $3::jsonb, $4)
     ON CONFLICT (tenant_id, provider) DO UPDATE
       SET settings = EXCLUDED.settings, secrets_ciphertext = EXCLUDED.secrets_ciphertext, updated_at = now()
     RETURNING provider, settings, secrets_ciphertext, updated_at`;
const DELETE_TRANSPORT = `DELETE FROM push_transports WHERE tenant_id = $1 AND provider = $2`;
const VAPID_PUBLIC_KEY = `SELECT settings->>'public_key' AS public_key FROM push_transports
  WHERE tenant_id = $1 AND provider = 'webpush'`;

function toPushTransportResponse(row: PushTransportRow, unreadable: boolean): PushTransportResponse {
  return {
    provider: row.provider,
    settings: row.settings,
    credentials_unreadable: unreadable,
    updated_at: toIsoTimestamp(row.updated_at),
  };
}

export async function listPushTransports(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
): Promise<PushTransportResponse[]> {
  const rows = await findPushTransportRows(em, tenantId);
  return rows.map((row) => toPushTransportResponse(row, decryptPushSecrets(runtime, tenantId, row) === 'unreadable'));
}

function parseSettings<P extends PushProvider>(
  provider: P,
  body: unknown,
): z.infer<(typeof PushSettingsByProvider)[P]> {
  const result = PushSettingsByProvider[provider].safeParse(body);
  if (!result.success) throw new ValidationFailure(issuesOf('body', result.error));
  return result.data as z.infer<(typeof PushSettingsByProvider)[P]>;
}

/** Splits a validated request into stored settings and secret fields, checking keys are usable. */
async function splitSettings(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  provider: PushProvider,
  body: unknown,
): Promise<{ settings: Record<string, unknown>; secrets: Record<string, unknown> | null }> {
  switch (provider) {
    case 'apns': {
      const s = parseSettings('apns', body);
      if (!parsePrivateKey(s.private_key, 'ec-p256'))
        throw invalidField(['body', 'private_key'], 'must be the PEM of an APNs .p8 key (P-256)');
      return {
        settings: { team_id: s.team_id, key_id: s.key_id, bundle_id: s.bundle_id, environment: s.environment },
        secrets: { private_key: s.private_key },
      };
    }
    case 'fcm': {
      const { service_account: sa } = parseSettings('fcm', body);
      if (!parsePrivateKey(sa.private_key, 'rsa'))
        throw invalidField(
          ['body', 'service_account', 'private_key'],
          'must be the PEM of the service account RSA key',
        );
      return {
        settings: {
          project_id: sa.project_id,
          client_email: sa.client_email,
          private_key_id: sa.private_key_id ?? null,
          token_uri: sa.token_uri ?? null,
        },
        secrets: { private_key: sa.private_key },
      };
    }
    case 'expo': {
      const s = parseSettings('expo', body);
      return { settings: {}, secrets: s.access_token ? { access_token: s.access_token } : null };
    }
    case 'webpush': {
      const s = parseSettings('webpush', body);
      let publicKey = s.public_key;
      let privateKey = s.private_key;
      if (privateKey) {
        const derived = vapidPublicKeyOf(privateKey);
        if (!derived) throw invalidField(['body', 'private_key'], 'must be a base64url P-256 private key');
        if (publicKey && publicKey.replace(/=+$/, '') !== derived)
          throw invalidField(['body', 'public_key'], 'does not match private_key');
        publicKey = derived;
      } else if (publicKey) {
        throw invalidField(['body', 'private_key'], 'is required when public_key is given');
      } else {
        // Keep the current key pair when only the subject changes: a new pair would orphan every
        // browser subscription made with the old applicationServerKey.
        const current = await loadPushTransport(runtime, em, tenantId, 'webpush');
        if (current?.state === 'ready' && current.credentials.provider === 'webpush') {
          publicKey = current.credentials.public_key;
          privateKey = current.credentials.private_key;
        } else {
          const generated = generateVapidKeys();
          publicKey = generated.public_key;
          privateKey = generated.private_key;
        }
      }
      return { settings: { subject: s.subject, public_key: publicKey }, secrets: { private_key: privateKey } };
    }
  }
}

export async function putPushTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  provider: PushProvider,
  body: unknown,
): Promise<PushTransportResponse> {
  const { settings, secrets } = await splitSettings(runtime, em, tenantId, provider, body);
  const ciphertext = secrets
    ? runtime.keyRing.encrypt(JSON.stringify(secrets), pushTransportSecretsAad(tenantId, provider))
    : null;
  const row = await queryOne<PushTransportRow>(em, PUT_TRANSPORT, [
    tenantId,
    provider,
    JSON.stringify(settings),
    ciphertext,
  ]);
  return toPushTransportResponse(row!, false);
}

export async function deletePushTransport(em: EntityManager, tenantId: string, provider: PushProvider): Promise<void> {
  await execute(em, DELETE_TRANSPORT, [tenantId, provider]);
}

/** The tenant's VAPID public key (the browser's applicationServerKey). */
export async function webPushPublicKey(em: EntityManager, tenantId: string): Promise<string> {
  const row = await queryOne<{ public_key: string | null }>(em, VAPID_PUBLIC_KEY, [tenantId]);
  if (!row?.public_key) throw new AppError('not_found', 'This tenant has no web push transport');
  return row.public_key;
}

/** Sends a test notification through the provider's transport and reports the provider's answer. */
export async function testPushTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  provider: PushProvider,
  input: {
    token?: string;
    subscription?: { endpoint: string; keys: { p256dh: string; auth: string } };
    title?: string;
    body?: string;
  },
): Promise<SendTestResult> {
  let destination: PushDestination;
  if (provider === 'webpush') {
    if (!input.subscription)
      throw invalidField(['body', 'subscription'], 'a web push test needs a browser subscription');
    destination = { provider, subscription: input.subscription };
  } else {
    if (!input.token) throw invalidField(['body', 'token'], `a ${provider} test needs a device token`);
    destination = { provider, token: input.token };
  }
  const loaded = await loadPushTransport(runtime, em, tenantId, provider);
  if (!loaded) throw new AppError('not_configured', `No ${provider} push transport is configured for this tenant`);
  if (loaded.state === 'unreadable') {
    return {
      ok: false,
      error:
        'credentials_unreadable: the secrets were encrypted with a key that is no longer in the key ring; set them again',
    };
  }
  const outcome = await sendPushWith(runtime, loaded.credentials, destination, {
    title: input.title ?? 'Herald test notification',
    body: input.body ?? `Your ${provider} push transport works.`,
    data: { herald_test: true },
  });
  if (outcome.status === 'sent') return { ok: true, message_id: outcome.providerMessageId ?? '' };
  if (outcome.status === 'skipped') return { ok: false, error: outcome.reason };
  return { ok: false, error: outcome.error };
}

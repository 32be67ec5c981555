// A tenant's push transport for one provider as stored: its non-secret settings and its secret fields,
// decrypted together into the credentials an adapter sends with. Read by the sender (index.ts) and by
// the service that manages transports (services/push-transports.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import { pushTransportSecretsAad } from '../../base/crypto/aad.ts';
import { isUnreadable } from '../../base/crypto/keyring.ts';
import { query } from '../../base/db/sql.ts';
import type { Context } from '../../base/context.ts';
import type { PushProvider } from '../../schemas/common.ts';
import type { ApnsCredentials } from './apns.ts';
import type { ExpoCredentials } from './expo.ts';
import type { FcmCredentials } from './fcm.ts';
import type { WebPushCredentials } from '../web-push/provider.ts';

/** A provider's settings and decrypted secrets together. */
export type ProviderCredentials =
  | ({ provider: 'apns' } & ApnsCredentials)
  | ({ provider: 'fcm' } & FcmCredentials)
  | ({ provider: 'expo' } & ExpoCredentials)
  | ({ provider: 'webpush' } & WebPushCredentials);

export interface PushTransportRow {
  provider: PushProvider;
  settings: Record<string, unknown>;
  secrets_ciphertext: string | null;
  updated_at: Date;
}

export type LoadedPushTransport = { state: 'ready'; credentials: ProviderCredentials } | { state: 'unreadable' };

/** The tenant's transports, or ($2) the one of a provider. */
const FIND_TRANSPORTS = `SELECT provider, settings, secrets_ciphertext, updated_at FROM push_transports
      WHERE tenant_id = $1 AND ($2::text IS NULL OR provider = $2) ORDER BY provider`;

export function decryptPushSecrets(
  runtime: Context,
  tenantId: string,
  row: PushTransportRow,
): Record<string, unknown> | 'unreadable' {
  if (!row.secrets_ciphertext) return {};
  try {
    return JSON.parse(
      runtime.keyRing.decrypt(row.secrets_ciphertext, pushTransportSecretsAad(tenantId, row.provider)),
    ) as Record<string, unknown>;
  } catch (error) {
    if (isUnreadable(error)) return 'unreadable';
    throw error;
  }
}

export async function findPushTransportRows(
  em: EntityManager,
  tenantId: string,
  provider?: PushProvider,
): Promise<PushTransportRow[]> {
  return query<PushTransportRow>(em, FIND_TRANSPORTS, [tenantId, provider ?? null]);
}

/** The provider's credentials (settings + decrypted secrets); null when the tenant has no such transport. */
export async function loadPushTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  provider: PushProvider,
): Promise<LoadedPushTransport | null> {
  const [row] = await findPushTransportRows(em, tenantId, provider);
  if (!row) return null;
  const secrets = decryptPushSecrets(runtime, tenantId, row);
  if (secrets === 'unreadable') return { state: 'unreadable' };
  return { state: 'ready', credentials: { provider, ...row.settings, ...secrets } as ProviderCredentials };
}

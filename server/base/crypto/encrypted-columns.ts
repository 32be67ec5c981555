// Every column that holds a key-ring ciphertext, with the additional data (row identity) it is bound
// to. Key rotation walks this list to re-wrap every secret; a feature that stores a new secret adds
// its column here, and encrypts/decrypts with the context aad.ts defines for it.
import { BOSS_SCHEMA, SYSTEM_EMAIL_JOB } from '../queue.ts';
import {
  broadcastSecretAad,
  chatTransportSecretsAad,
  chatWebhookUrlAad,
  dkimKeyAad,
  emailTransportPasswordAad,
  httpTransportHeadersAad,
  httpTransportSecretAad,
  installSecretAad,
  mfaSecretAad,
  pushTransportSecretsAad,
  secretVariablesAad,
  smsTransportSecretsAad,
  ssoClientSecretAad,
  systemEmailAad,
  webhookSecretAad,
} from './aad.ts';

export interface EncryptedColumn {
  /** The table, schema-qualified where it is not in the search path. */
  table: string;
  column: string;
  /** For a ciphertext kept inside a jsonb column: its key there. */
  jsonKey?: string;
  /** An SQL condition on the rows that hold a live ciphertext, where not every row does. */
  where?: string;
  /** Columns that identify a row (used to update it in batches). */
  keyColumns: string[];
  /** SQL expressions `aad` reads beyond the key columns, by the name it reads them under. */
  aadInputs?: Record<string, string>;
  /** The additional authenticated data of a row, from its key columns (and aadInputs). */
  aad(row: Record<string, unknown>): string;
}

export const encryptedColumns: EncryptedColumn[] = [
  {
    table: 'install_secrets',
    column: 'ciphertext',
    keyColumns: ['name'],
    aad: (r) => installSecretAad(String(r.name)),
  },
  {
    table: 'sender_domains',
    column: 'dkim_private_key_ciphertext',
    keyColumns: ['id'],
    aad: (r) => dkimKeyAad(String(r.id)),
  },
  {
    table: 'email_transports',
    column: 'password_ciphertext',
    keyColumns: ['tenant_id', 'slot'],
    aad: (r) => emailTransportPasswordAad(String(r.tenant_id), r.slot === 'fallback' ? 'fallback' : 'primary'),
  },
  {
    table: 'push_transports',
    column: 'secrets_ciphertext',
    keyColumns: ['tenant_id', 'provider'],
    aad: (r) => pushTransportSecretsAad(String(r.tenant_id), String(r.provider)),
  },
  {
    table: 'chat_destinations',
    column: 'webhook_url_ciphertext',
    keyColumns: ['id'],
    aadInputs: { tenant_id: 'tenant_id' },
    aad: (r) => chatWebhookUrlAad(String(r.tenant_id), String(r.id)),
  },
  {
    table: 'chat_transports',
    column: 'secrets_ciphertext',
    keyColumns: ['tenant_id', 'provider'],
    aad: (r) => chatTransportSecretsAad(String(r.tenant_id), String(r.provider)),
  },
  {
    table: 'http_transports',
    column: 'headers_ciphertext',
    keyColumns: ['tenant_id'],
    aad: (r) => httpTransportHeadersAad(String(r.tenant_id)),
  },
  {
    table: 'http_transports',
    column: 'secret_ciphertext',
    keyColumns: ['tenant_id'],
    aad: (r) => httpTransportSecretAad(String(r.tenant_id)),
  },
  {
    table: 'sms_transports',
    column: 'secrets_ciphertext',
    keyColumns: ['tenant_id', 'provider'],
    aad: (r) => smsTransportSecretsAad(String(r.tenant_id), String(r.provider)),
  },
  {
    table: 'events',
    column: 'secret_variables_ciphertext',
    keyColumns: ['id'],
    aad: (r) => secretVariablesAad(String(r.id)),
  },
  {
    table: 'webhook_endpoints',
    column: 'secret_ciphertext',
    keyColumns: ['id'],
    aad: (r) => webhookSecretAad(String(r.id)),
  },
  {
    table: 'sso_providers',
    column: 'client_secret_ciphertext',
    keyColumns: ['id'],
    aad: (r) => ssoClientSecretAad(String(r.id)),
  },
  {
    table: 'mfa_factors',
    column: 'secret_ciphertext',
    keyColumns: ['id'],
    aad: (r) => mfaSecretAad(String(r.id)),
  },
  {
    // Until the fan-out has copied them into every event (and the broadcast is final).
    table: 'broadcasts',
    column: 'secret_variables_ciphertext',
    keyColumns: ['id'],
    aad: (r) => broadcastSecretAad(String(r.id)),
  },
  {
    // The link token of a system email waiting in the queue (jobs/system-email.ts); once the job is
    // done, its data is never read again.
    table: `${BOSS_SCHEMA}.job`,
    column: 'data',
    jsonKey: 'sealed_token',
    where: `name = '${SYSTEM_EMAIL_JOB}' AND state IN ('created', 'retry', 'active')`,
    keyColumns: ['name', 'id'],
    aadInputs: { seal_id: `data->>'seal_id'` },
    aad: (r) => systemEmailAad(String(r.seal_id)),
  },
];

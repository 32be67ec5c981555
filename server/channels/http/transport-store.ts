// The http_transports row of a tenant as stored, and decrypted into what a send needs: the URL, the
// secret headers and the signing key. Read by the sender (channel.ts) and by the service that manages
// the transport (http-transport.ts); every write of the table is here.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, queryOne } from '../../base/db/sql.ts';
import { httpTransportHeadersAad, httpTransportSecretAad } from '../../base/crypto/aad.ts';
import { isUnreadable } from '../../base/crypto/keyring.ts';
import type { Context } from '../../base/context.ts';

export interface HttpTransportRow {
  url: string;
  headers_ciphertext: string | null;
  secret_ciphertext: string;
  include_secret_variables: boolean;
  created_at: Date;
  updated_at: Date;
}

/** What a send needs of the transport; unreadable: a ciphertext's key is gone from the key ring. */
export type LoadedHttpTransport =
  | {
      state: 'ready';
      url: string;
      headers: Record<string, string>;
      secret: string;
      includeSecretVariables: boolean;
    }
  | { state: 'unreadable' };

const COLUMNS = 'url, headers_ciphertext, secret_ciphertext, include_secret_variables, created_at, updated_at';

const FIND_TRANSPORT = `SELECT ${COLUMNS} FROM http_transports WHERE tenant_id = $1`;
const LOCK_TRANSPORT = `SELECT ${COLUMNS} FROM http_transports WHERE tenant_id = $1 FOR UPDATE`;
/** Creates the transport unless one exists (a concurrent create): then nothing is returned. */
const INSERT_TRANSPORT = `INSERT INTO http_transports
       (tenant_id, url, headers_ciphertext, secret_ciphertext, include_secret_variables)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (tenant_id) DO NOTHING
     RETURNING ${COLUMNS}`;
/** Replaces the settings; a null $5 keeps the signing secret. */
const UPDATE_TRANSPORT = `UPDATE http_transports
     SET url = $2, headers_ciphertext = $3, include_secret_variables = $4,
         secret_ciphertext = coalesce($5, secret_ciphertext), updated_at = now()
   WHERE tenant_id = $1
   RETURNING ${COLUMNS}`;
const ROTATE_SECRET = `UPDATE http_transports SET secret_ciphertext = $2, updated_at = now()
   WHERE tenant_id = $1 RETURNING ${COLUMNS}`;
const DELETE_TRANSPORT = `DELETE FROM http_transports WHERE tenant_id = $1`;

export function findHttpTransportRow(em: EntityManager, tenantId: string): Promise<HttpTransportRow | undefined> {
  return queryOne<HttpTransportRow>(em, FIND_TRANSPORT, [tenantId]);
}

/** The row, locked until the caller's transaction ends (a write reads what it replaces). */
export function lockHttpTransportRow(em: EntityManager, tenantId: string): Promise<HttpTransportRow | undefined> {
  return queryOne<HttpTransportRow>(em, LOCK_TRANSPORT, [tenantId]);
}

export function insertHttpTransportRow(
  em: EntityManager,
  tenantId: string,
  values: { url: string; headersCiphertext: string | null; secretCiphertext: string; includeSecretVariables: boolean },
): Promise<HttpTransportRow | undefined> {
  return queryOne<HttpTransportRow>(em, INSERT_TRANSPORT, [
    tenantId,
    values.url,
    values.headersCiphertext,
    values.secretCiphertext,
    values.includeSecretVariables,
  ]);
}

export async function updateHttpTransportRow(
  em: EntityManager,
  tenantId: string,
  values: {
    url: string;
    headersCiphertext: string | null;
    includeSecretVariables: boolean;
    /** null keeps the stored secret. */
    secretCiphertext: string | null;
  },
): Promise<HttpTransportRow> {
  const row = await queryOne<HttpTransportRow>(em, UPDATE_TRANSPORT, [
    tenantId,
    values.url,
    values.headersCiphertext,
    values.includeSecretVariables,
    values.secretCiphertext,
  ]);
  return row!;
}

export function rotateHttpTransportSecret(
  em: EntityManager,
  tenantId: string,
  secretCiphertext: string,
): Promise<HttpTransportRow | undefined> {
  return queryOne<HttpTransportRow>(em, ROTATE_SECRET, [tenantId, secretCiphertext]);
}

export async function deleteHttpTransportRow(em: EntityManager, tenantId: string): Promise<void> {
  await execute(em, DELETE_TRANSPORT, [tenantId]);
}

export function encryptHeaders(runtime: Context, tenantId: string, headers: Record<string, string>): string | null {
  if (Object.keys(headers).length === 0) return null;
  return runtime.keyRing.encrypt(JSON.stringify(headers), httpTransportHeadersAad(tenantId));
}

export function encryptSecret(runtime: Context, tenantId: string, secret: string): string {
  return runtime.keyRing.encrypt(secret, httpTransportSecretAad(tenantId));
}

/** The stored headers; 'unreadable' when their key is gone. */
export function decryptHeaders(
  runtime: Context,
  tenantId: string,
  row: Pick<HttpTransportRow, 'headers_ciphertext'>,
): Record<string, string> | 'unreadable' {
  if (!row.headers_ciphertext) return {};
  return readable(
    () =>
      JSON.parse(runtime.keyRing.decrypt(row.headers_ciphertext!, httpTransportHeadersAad(tenantId))) as Record<
        string,
        string
      >,
  );
}

/** The signing secret (whsec_...); 'unreadable' when its key is gone. */
export function decryptSecret(
  runtime: Context,
  tenantId: string,
  row: Pick<HttpTransportRow, 'secret_ciphertext'>,
): string | 'unreadable' {
  return readable(() => runtime.keyRing.decrypt(row.secret_ciphertext, httpTransportSecretAad(tenantId)));
}

function readable<T>(decrypt: () => T): T | 'unreadable' {
  try {
    return decrypt();
  } catch (error) {
    if (isUnreadable(error)) return 'unreadable';
    throw error;
  }
}

/** The tenant's transport, decrypted; null when it has none. */
export async function loadHttpTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
): Promise<LoadedHttpTransport | null> {
  const row = await findHttpTransportRow(em, tenantId);
  if (!row) return null;
  const headers = decryptHeaders(runtime, tenantId, row);
  const secret = decryptSecret(runtime, tenantId, row);
  if (headers === 'unreadable' || secret === 'unreadable') return { state: 'unreadable' };
  return { state: 'ready', url: row.url, headers, secret, includeSecretVariables: row.include_secret_variables };
}

// Key ring operations behind `herald keys list|rotate|retire`: how many ciphertexts each ring key
// protects, adding a key and re-wrapping every registered ciphertext under it, and removing a key once
// nothing uses it. The key file is the source of truth; HERALD_ENCRYPTION_KEYS cannot be changed here.
import type { EntityManager } from '@mikro-orm/postgresql';
import { encryptedColumns, type EncryptedColumn } from '../base/crypto/encrypted-columns.ts';
import type { Config } from '../base/config.ts';
import {
  DecryptionError,
  KeyUnavailableError,
  generateKey,
  readKeyFile,
  writeKeyFile,
  type KeyRing,
  type NoKeyFileError,
} from '../base/crypto/keyring.ts';
import { query, execute } from '../base/db/sql.ts';
import { openDatabase } from '../base/db/orm.ts';
import { AppError } from '../base/errors.ts';

export interface KeyUsage {
  id: string;
  active: boolean;
  /** Ciphertexts wrapped by this key, over every registered column. */
  ciphertexts: number;
}

export interface KeyListing {
  source: 'key_file' | 'environment';
  keys: KeyUsage[];
  /** Ciphertexts whose key id is not in the ring (unreadable secrets). */
  missing: Array<{ id: string; ciphertexts: number }>;
}

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;
/** A table name, schema-qualified or not. */
const quoteTable = (table: string) => table.split('.').map(quote).join('.');
/** The ciphertext of a row: the column, or the key inside the jsonb column that holds it. */
const ciphertextSql = (col: EncryptedColumn) =>
  col.jsonKey ? `(${quote(col.column)} ->> ${literal(col.jsonKey)})` : quote(col.column);
const keyIdSql = (col: EncryptedColumn) => `split_part(${ciphertextSql(col)}, '.', 2)`;
/** The rows that hold a ciphertext. */
const holdsCiphertext = (col: EncryptedColumn) =>
  `${ciphertextSql(col)} IS NOT NULL${col.where ? ` AND (${col.where})` : ''}`;

/** Ciphertext counts per envelope key id in one registered column. */
function ciphertextsByKeySql(col: EncryptedColumn): string {
  return `SELECT ${keyIdSql(col)} AS key_id, count(*)::int AS n FROM ${quoteTable(col.table)}
    WHERE ${holdsCiphertext(col)} GROUP BY 1`;
}

/**
 * A batch of a column's ciphertexts not under the active key ($1), at most $2, locked; `afterCursor`: past
 * the row whose key columns are $3...
 */
function rewrapBatchSql(col: EncryptedColumn, afterCursor: boolean): string {
  const keys = col.keyColumns.map(quote).join(', ');
  const aadInputs = Object.entries(col.aadInputs ?? {})
    .map(([name, sql]) => `, ${sql} AS ${quote(name)}`)
    .join('');
  const cursor = afterCursor ? `AND (${keys}) > (${col.keyColumns.map((_, i) => `$${i + 3}`).join(', ')})` : '';
  return `SELECT ${keys}, ${ciphertextSql(col)} AS ciphertext${aadInputs} FROM ${quoteTable(col.table)}
          WHERE ${holdsCiphertext(col)} AND ${keyIdSql(col)} <> $1 ${cursor}
          ORDER BY ${keys} LIMIT $2 FOR UPDATE SKIP LOCKED`;
}

/** Sets a row's ciphertext to $1 if it is still $2; the row's key columns are $3... */
function rewrapRowSql(col: EncryptedColumn): string {
  const assignment = col.jsonKey
    ? `jsonb_set(${quote(col.column)}, ARRAY[${literal(col.jsonKey)}], to_jsonb($1::text))`
    : '$1';
  const where = col.keyColumns.map((k, i) => `${quote(k)} = $${i + 3}`).join(' AND ');
  return `UPDATE ${quoteTable(col.table)} SET ${quote(col.column)} = ${assignment}
    WHERE ${ciphertextSql(col)} = $2 AND ${where}`;
}

/** Which of the install secrets $1 are encrypted with key $2. */
const ESSENTIAL_SECRETS_UNDER_KEY = `SELECT name FROM install_secrets
  WHERE name = ANY($1) AND split_part(ciphertext, '.', 2) = $2`;

/** Ciphertext counts per envelope key id over every registered column. */
export async function ciphertextsByKey(em: EntityManager): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const col of encryptedColumns) {
    const rows = await query<{ key_id: string; n: number }>(em, ciphertextsByKeySql(col));
    for (const row of rows) counts.set(row.key_id, (counts.get(row.key_id) ?? 0) + row.n);
  }
  return counts;
}

export async function listKeys(em: EntityManager, keyRing: KeyRing): Promise<KeyListing> {
  const counts = await ciphertextsByKey(em);
  const ids = keyRing.keyIds();
  return {
    source: keyRing.fromKeyFile ? 'key_file' : 'environment',
    keys: ids.map((id) => ({ id, active: id === keyRing.activeKeyId, ciphertexts: counts.get(id) ?? 0 })),
    missing: [...counts].filter(([id]) => !ids.includes(id)).map(([id, n]) => ({ id, ciphertexts: n })),
  };
}

/** Status warnings: secrets whose key is gone. */
export async function unreadableSecretWarnings(em: EntityManager, keyIds: string[]): Promise<string[]> {
  const counts = await ciphertextsByKey(em);
  const missing = [...counts].filter(([id]) => !keyIds.includes(id));
  return missing.map(
    ([id, n]) =>
      `${n} secret(s) are encrypted with key ${id}, which is not in the key ring: their transports show credentials_unreadable until they are set again`,
  );
}

/**
 * What to do about a missing key file, given what the database holds. A database with ciphertexts (a
 * restored install whose backup left the key file out, or a key file lost) needs its original keys
 * back: `herald init` would make a new key, under which none of them decrypts.
 */
export async function missingKeyFileAdvice(em: EntityManager, error: NoKeyFileError): Promise<string> {
  let counts: Map<string, number>;
  try {
    counts = await ciphertextsByKey(em);
  } catch {
    return error.message; // a database without Herald's tables: a new install
  }
  const total = [...counts.values()].reduce((sum, n) => sum + n, 0);
  if (total === 0) return error.message;
  return `no key file at ${error.path}, but the database holds ${total} secret(s) encrypted with key(s) ${[...counts.keys()].join(', ')}: copy the original keys.json to ${error.path}, or set HERALD_ENCRYPTION_KEYS to those keys ('herald init' would make a new key, and these secrets would stay unreadable)`;
}

/** missingKeyFileAdvice on a database opened for the purpose (embedded: started and stopped again); the plain message if it does not open. */
export async function missingKeyFileAdviceFor(config: Config, error: NoKeyFileError): Promise<string> {
  let db;
  try {
    db = await openDatabase(config, { poolMax: 1 });
  } catch {
    return error.message;
  }
  try {
    return await missingKeyFileAdvice(db.orm.em.fork(), error);
  } finally {
    await db.close().catch(() => undefined);
  }
}

function requireKeyFile(keyRing: KeyRing, dataDir: string, action: string) {
  if (!keyRing.fromKeyFile) {
    throw new AppError(
      'conflict',
      `Cannot ${action} keys: HERALD_ENCRYPTION_KEYS is set, so the environment is the key ring's source. Change the variable (new key first, old keys after it) and run 'herald keys rotate --resume' to re-wrap.`,
    );
  }
  const file = readKeyFile(dataDir);
  if (!file) throw new AppError('conflict', `No key file in ${dataDir}`);
  return file;
}

export interface RewrapReport {
  rewrapped: number;
  /** Ciphertexts left under an older key because that key is gone or the ciphertext is corrupt. */
  unreadable: number;
}

/**
 * Re-wraps every ciphertext not under the active key, a batch at a time and column by column. Each
 * batch is its own short transaction (rows locked with SKIP LOCKED, updated only if unchanged), so it
 * is safe while servers run and resumable: an interrupted run is finished by running it again.
 * Passes repeat until one finds nothing left, which catches rows a not-yet-reloaded server wrote
 * under the previous key meanwhile.
 */
export async function rewrapAll(
  em: EntityManager,
  keyRing: KeyRing,
  options: { batchSize?: number } = {},
): Promise<RewrapReport> {
  const batchSize = options.batchSize ?? 200;
  const report: RewrapReport = { rewrapped: 0, unreadable: 0 };
  for (let pass = 0; pass < 10; pass++) {
    let changed = 0;
    let unreadable = 0;
    for (const col of encryptedColumns) {
      const result = await rewrapColumn(em, keyRing, col, batchSize);
      changed += result.rewrapped;
      unreadable += result.unreadable;
    }
    report.rewrapped += changed;
    report.unreadable = unreadable;
    if (changed === 0) break;
  }
  return report;
}

async function rewrapColumn(
  em: EntityManager,
  keyRing: KeyRing,
  col: EncryptedColumn,
  batchSize: number,
): Promise<RewrapReport> {
  const result: RewrapReport = { rewrapped: 0, unreadable: 0 };
  const firstBatch = rewrapBatchSql(col, false);
  const nextBatch = rewrapBatchSql(col, true);
  const rewrapRow = rewrapRowSql(col);
  let after: unknown[] | null = null;
  for (;;) {
    const active = keyRing.activeKeyId;
    const batch = await em.fork().transactional(async (tx) => {
      const params: unknown[] = [active, batchSize];
      if (after) params.push(...after);
      const rows = await query<Record<string, unknown>>(tx, after ? nextBatch : firstBatch, params);
      let rewrapped = 0;
      let unreadable = 0;
      for (const row of rows) {
        let next: string;
        try {
          next = keyRing.rewrap(String(row.ciphertext), col.aad(row));
        } catch (error) {
          if (error instanceof KeyUnavailableError || error instanceof DecryptionError) {
            unreadable++;
            continue;
          }
          throw error;
        }
        rewrapped += await execute(tx, rewrapRow, [next, row.ciphertext, ...col.keyColumns.map((k) => row[k])]);
      }
      const last = rows.at(-1);
      return { count: rows.length, rewrapped, unreadable, last: last ? col.keyColumns.map((k) => last[k]) : null };
    });
    result.rewrapped += batch.rewrapped;
    result.unreadable += batch.unreadable;
    if (batch.count < batchSize || !batch.last) return result;
    after = batch.last;
  }
}

/** Install secrets Herald cannot start without (server/base/auth/tokens.ts signs every token with this one). */
const ESSENTIAL_INSTALL_SECRETS = ['token_signing_key'];

export interface RotateResult extends RewrapReport {
  activeKeyId: string;
  added: boolean;
}

/**
 * Adds a fresh key to the key file and makes it active (unless `resume`, which only finishes the
 * re-wrap), then re-wraps every ciphertext under it.
 */
export async function rotateKeys(
  em: EntityManager,
  keyRing: KeyRing,
  dataDir: string,
  options: { resume?: boolean; batchSize?: number; now?: number } = {},
): Promise<RotateResult> {
  let added = false;
  if (!options.resume) {
    const file = requireKeyFile(keyRing, dataDir, 'rotate');
    let id = `k${(options.now ?? Date.now()).toString(36)}`;
    while (file.keys[id]) id = `${id}x`;
    writeKeyFile(dataDir, { active: id, keys: { [id]: generateKey(), ...file.keys } });
    keyRing.reload();
    added = true;
  }
  const report = await rewrapAll(em, keyRing, { batchSize: options.batchSize });
  return { activeKeyId: keyRing.activeKeyId, added, ...report };
}

/** Removes a non-active key from the key file; refuses while ciphertexts use it unless `force`. */
export async function retireKey(
  em: EntityManager,
  keyRing: KeyRing,
  dataDir: string,
  keyId: string,
  options: { force?: boolean } = {},
): Promise<{ id: string; orphaned: number }> {
  const file = requireKeyFile(keyRing, dataDir, 'retire');
  if (!file.keys[keyId]) throw new AppError('not_found', `Key ${keyId} is not in the key file`);
  if (file.active === keyId) throw new AppError('conflict', `Key ${keyId} is the active key; rotate first`);
  const inUse = (await ciphertextsByKey(em)).get(keyId) ?? 0;
  if (inUse > 0 && !options.force) {
    throw new AppError(
      'conflict',
      `Key ${keyId} still protects ${inUse} secret(s): run 'herald keys rotate --resume' to re-wrap them, or pass --force to make them unreadable`,
    );
  }
  if (inUse > 0) {
    const essential = await query<{ name: string }>(em, ESSENTIAL_SECRETS_UNDER_KEY, [
      ESSENTIAL_INSTALL_SECRETS,
      keyId,
    ]);
    if (essential.length > 0) {
      // Even --force must not orphan these: no Herald process could start any more.
      throw new AppError(
        'conflict',
        `Key ${keyId} still protects ${essential.map((e) => e.name).join(', ')}, without which Herald cannot start: run 'herald keys rotate --resume' first`,
      );
    }
  }
  const keys = { ...file.keys };
  delete keys[keyId];
  writeKeyFile(dataDir, { active: file.active, keys });
  keyRing.reload();
  return { id: keyId, orphaned: inUse };
}

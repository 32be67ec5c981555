// install_secrets, the install's own encrypted secrets (the default SMTP, token signing keys): channels
// and auth read and store theirs through these, below every layer that needs one.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, queryOne } from './db/sql.ts';

const READ_SECRET = `SELECT ciphertext FROM install_secrets WHERE name = $1`;
const STORE_SECRET = `INSERT INTO install_secrets (name, ciphertext) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET ciphertext = EXCLUDED.ciphertext, updated_at = now()`;
const STORE_SECRET_ONCE = `INSERT INTO install_secrets (name, ciphertext) VALUES ($1, $2)
     ON CONFLICT (name) DO NOTHING`;
const DELETE_SECRET = `DELETE FROM install_secrets WHERE name = $1`;

/** The secret `name` as stored (encrypted), or null when there is none. */
export async function readInstallSecret(em: EntityManager, name: string): Promise<string | null> {
  return (await queryOne<{ ciphertext: string }>(em, READ_SECRET, [name]))?.ciphertext ?? null;
}

/** Stores (or replaces) the secret `name`, already encrypted. */
export async function storeInstallSecret(em: EntityManager, name: string, ciphertext: string): Promise<void> {
  await execute(em, STORE_SECRET, [name, ciphertext]);
}

/** Stores the secret `name` unless one is stored already (the first process to start makes it). */
export async function storeInstallSecretOnce(em: EntityManager, name: string, ciphertext: string): Promise<void> {
  await execute(em, STORE_SECRET_ONCE, [name, ciphertext]);
}

/** Deletes the secret `name`; true when there was one. */
export async function deleteInstallSecret(em: EntityManager, name: string): Promise<boolean> {
  return (await execute(em, DELETE_SECRET, [name])) > 0;
}

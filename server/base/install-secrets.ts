// Writes of install_secrets, the install's own encrypted secrets (the default SMTP, token signing
// keys): channels and auth store theirs through these, below every layer that needs one.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute } from './db/sql.ts';

/** Stores (or replaces) the secret `name`, already encrypted. */
export async function storeInstallSecret(em: EntityManager, name: string, ciphertext: string): Promise<void> {
  await execute(
    em,
    `INSERT INTO install_secrets (name, ciphertext) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET ciphertext = EXCLUDED.ciphertext, updated_at = now()`,
    [name, ciphertext],
  );
}

/** Stores the secret `name` unless one is stored already (the first process to start makes it). */
export async function storeInstallSecretOnce(em: EntityManager, name: string, ciphertext: string): Promise<void> {
  await execute(em, `INSERT INTO install_secrets (name, ciphertext) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, [
    name,
    ciphertext,
  ]);
}

/** Deletes the secret `name`; true when there was one. */
export async function deleteInstallSecret(em: EntityManager, name: string): Promise<boolean> {
  return (await execute(em, `DELETE FROM install_secrets WHERE name = $1`, [name])) > 0;
}

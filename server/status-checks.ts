// Health warnings `herald status` prints beyond connectivity (features add theirs here, e.g. secrets
// whose encryption key is gone).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from './config.ts';
import { loadKeyRing } from './crypto/keyring.ts';
import { unreadableSecretWarnings } from './services/keys.ts';

export async function statusChecks(em: EntityManager, config: Config): Promise<string[]> {
  const warnings: string[] = [];
  // Secrets whose encryption key is gone (retired with --force, or dropped from HERALD_ENCRYPTION_KEYS).
  // A key ring that does not load at all is reported by `herald status` itself.
  let keyIds: string[] | null;
  try {
    keyIds = loadKeyRing({ dataDir: config.dataDir, encryptionKeys: config.encryptionKeys }).keyIds();
  } catch {
    keyIds = null;
  }
  if (keyIds) warnings.push(...(await unreadableSecretWarnings(em, keyIds)));
  return warnings;
}

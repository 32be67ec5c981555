// Health warnings `herald status` prints beyond connectivity (features add theirs here, e.g. secrets
// whose encryption key is gone).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from './config.ts';

export async function statusChecks(_em: EntityManager, _config: Config): Promise<string[]> {
  return [];
}

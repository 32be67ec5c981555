// Whether a data directory holds an initialised install, checked without creating anything: commands
// that must not set one up by accident (status, backup) ask this first.
import { existsSync } from 'node:fs';
import { CONFIG_FILE_NAME, configFilePath, type Config } from '../../server/base/config.ts';
import { secretFileOf } from '../../server/base/db/embedded-postgres.ts';

/** Why `config.dataDir` is not an initialised install, or null when it is. */
export function notInitialised(config: Config): string | null {
  if (!existsSync(config.dataDir))
    return `${config.dataDir} does not exist (run 'herald init --data-dir ${config.dataDir}')`;
  if (!existsSync(configFilePath(config.dataDir)) && !config.databaseUrl)
    return `${config.dataDir} has no ${CONFIG_FILE_NAME} (run 'herald init')`;
  if (!config.databaseUrl && !existsSync(secretFileOf(config.dataDir)))
    return `${config.dataDir} has no embedded PostgreSQL cluster (run 'herald init')`;
  return null;
}

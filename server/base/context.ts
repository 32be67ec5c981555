// What most modules need of the running appliance, passed to them explicitly as `runtime`: the
// configuration, logger, clock, database, key ring, token signer and job queue. server/app/runtime.ts
// builds it and adds the process's own parts (the SMTP pool, the stream hub, the bounce listener),
// which it hands only to the few modules that use them.
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from './config.ts';
import type { Clock } from './clock.ts';
import type { Logger } from './logger.ts';
import type { Database } from './db/orm.ts';
import type { DatabaseAvailability } from './db/availability.ts';
import type { KeyRing } from './crypto/keyring.ts';
import type { TokenSigner } from './auth/tokens.ts';
import type { ServiceKeyCache } from './auth/service-key-cache.ts';
import type { PgBoss } from './queue.ts';

/** all: everything; api: HTTP only; worker: delivery jobs and webhooks; inbound: the bounce SMTP listener only. */
export type Role = 'all' | 'api' | 'worker' | 'inbound';

export interface Context {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly role: Role;
  readonly db: Database;
  readonly orm: MikroORM;
  readonly keyRing: KeyRing;
  readonly tokens: TokenSigner;
  /** null only while starting or after stopping. */
  boss: PgBoss | null;
  /** Cleanups registered by features (stream listeners, pools), run on stop in reverse order. */
  readonly cleanups: Array<() => Promise<void>>;
  /** Verified service keys; in use only while the stream hub's connection hears key changes. */
  readonly serviceKeys: ServiceKeyCache;
  /** Whether the database answers (outages answer 503 and are logged once). */
  readonly availability: DatabaseAvailability;
}

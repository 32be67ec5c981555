// One resource kind of configuration as code: how its entries are named, read as the export writes
// them, and written through the resource's own service (so every rule of the API holds).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context } from '../../base/context.ts';
import type { ConfigurationDocument, ConfigurationKindName } from '../../schemas/configuration.ts';

export interface KindContext {
  runtime: Context;
  /** The apply's (or export's) transaction. */
  tx: EntityManager;
  tenantId: string;
  /** What an entry that leaves them out means. */
  defaultBrandKey: string;
  defaultLanguage: string;
}

export interface ConfigurationKind<N extends ConfigurationKindName = ConfigurationKindName> {
  name: N;
  /** The entry's identity within the tenant (key, domain, template slot). */
  id(entry: Entry<N>): string;
  /** The entry as the export writes it: every field explicit, defaults resolved. */
  normalise(entry: Entry<N>, ctx: KindContext): Entry<N>;
  /** The tenant's entries, normalised. */
  read(ctx: KindContext): Promise<Array<Entry<N>>>;
  create(ctx: KindContext, entry: Entry<N>): Promise<void>;
  /** Changes `current` into `desired` (same identity); `fields` are the ones that differ. */
  update(ctx: KindContext, current: Entry<N>, desired: Entry<N>, fields: string[]): Promise<void>;
  remove(ctx: KindContext, current: Entry<N>): Promise<void>;
  /** Whether --prune may delete it (the default brand never). */
  prunable?(entry: Entry<N>, ctx: KindContext): boolean;
}

export type Entry<N extends ConfigurationKindName> = ConfigurationDocument[N][number];

// Service keys this process has verified, kept for a minute so the hottest route (a trigger) skips
// one database round trip per request. A revocation or deletion must still take effect at once, on
// every process: a trigger on api_keys announces each change on API_KEYS_CHANNEL (the baseline migration),
// the stream hub's LISTEN connection hands the notice to evict(), and while that connection is down
// nothing is cached at all (a notice could be missed). Only processes holding a hub have a cache.
import type { Credential } from './credentials.ts';

export const API_KEYS_CHANNEL = 'herald_api_keys';

/** A verified key is trusted this long; it also paces the `last_used_at` updates of a busy key. */
export const SERVICE_KEY_CACHE_TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;

type ServiceCredential = Extract<Credential, { kind: 'service' }>;

export class ServiceKeyCache {
  readonly #byHash = new Map<string, { credential: ServiceCredential; until: number }>();
  /** Bumped by every eviction: a lookup that raced one must not store what it read. */
  #generation = 0;
  #listening = false;

  /** A trusted credential for this key hash, or null (look it up). */
  get(keyHash: string, now: number): ServiceCredential | null {
    if (!this.#listening) return null;
    const entry = this.#byHash.get(keyHash);
    if (!entry) return null;
    if (entry.until > now) return entry.credential;
    this.#byHash.delete(keyHash);
    return null;
  }

  /** Read before a database lookup and handed back to remember(). */
  get generation(): number {
    return this.#generation;
  }

  /** Keeps a credential read from the database, unless a change was announced since the read began. */
  remember(keyHash: string, credential: ServiceCredential, generation: number, now: number): void {
    if (!this.#listening || generation !== this.#generation) return;
    if (this.#byHash.size >= MAX_ENTRIES) this.#byHash.clear();
    this.#byHash.set(keyHash, { credential, until: now + SERVICE_KEY_CACHE_TTL_MS });
  }

  /** A key changed (revoked, deleted): forget it. */
  evict(apiKeyId: string): void {
    this.#generation++;
    for (const [hash, entry] of this.#byHash) if (entry.credential.apiKeyId === apiKeyId) this.#byHash.delete(hash);
  }

  /** The change notices flow (listening) or may be missed (not listening: forget all, cache nothing). */
  setListening(listening: boolean): void {
    this.#generation++;
    this.#byHash.clear();
    this.#listening = listening;
  }
}

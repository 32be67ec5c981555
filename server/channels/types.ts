// The contract every delivery channel implements: deliver one delivery row (one channel, one
// destination) and say what happened. The worker records the outcome; channels never touch statuses.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context } from '../base/context.ts';
import type { SmtpPool } from './email/smtp.ts';
import type { Channel } from '../schemas/common.ts';
import type { ContactRow } from '../base/db/contacts.ts';
import type { BrandRow } from './resolve.ts';
import type { TemplateCache } from './render-delivery.ts';

/** Why a delivery was skipped; tenant_archived for events of a tenant archived after the trigger. */
export type SkipReason =
  | 'opted_out'
  | 'channel_disabled'
  /** A workflow's channel step for a channel the trigger's `channels` leave out. */
  | 'not_requested'
  | 'no_template'
  | 'no_destination'
  | 'no_transport'
  | 'credentials_unreadable'
  | 'tenant_archived'
  | 'canceled'
  /** The address is on the tenant's suppression list (bounced, complained, or added by hand). */
  | 'suppressed';

/** One provider's answer within a delivery's attempt; a failover makes several per attempt. */
export interface ProviderAttempt {
  at: string;
  provider: string;
  /** skipped: not asked (its circuit open, or paused by a Retry-After). */
  outcome: 'sent' | 'failed' | 'skipped';
  error: string | null;
}

/** Which provider answered and the providers asked on the way (channels with failover fill them in). */
interface ProviderTrail {
  /** The provider that answered last; the delivery's `provider` becomes it. */
  provider?: string;
  providerAttempts?: ProviderAttempt[];
}

export type DeliveryOutcome =
  /** delivered: stored in the inbox or confirmed; sent: accepted by SMTP or a push service. */
  | ({ status: 'delivered' | 'sent'; providerMessageId?: string | null } & ProviderTrail)
  | { status: 'skipped'; reason: SkipReason }
  /**
   * retryable: worth another attempt later (network, 5xx, 429); otherwise final at once. `retryAt`
   * (epoch ms): every provider asked the sender to wait until then (a 429 with Retry-After, or such a
   * pause still running), so the next attempt is due then and this one spends none of the retries.
   */
  | ({ status: 'failed'; error: string; retryable: boolean; retryAt?: number } & ProviderTrail);

/**
 * Records what is learnt of a sent delivery later (a bounce, a complaint) on its row. The deliveries
 * table's owner supplies it (delivery/late-outcomes.ts) to the channel that hears of such outcomes.
 */
export type LateOutcomeRecorder = (
  em: EntityManager,
  deliveryId: string,
  outcome: { status: 'bounced' | 'complained'; error: string },
) => Promise<void>;

export interface DeliveryRow {
  id: string;
  channel: Channel;
  /** '' for inbox; the email address; the push subscription id. */
  destination: string;
  provider: string | null;
  attempts: number;
}

export interface EventForDelivery {
  id: string;
  tenant_id: string;
  type_key: string;
  brand_key: string | null;
  external_id: string;
  /** Public variables only (what may be stored in clear, e.g. an inbox item's data). */
  variables: Record<string, unknown>;
  /** The brand to render with: the event's, or the tenant's default when none was named or it has been deleted since. */
  brand: BrandRow | null;
  default_brand_key: string | null;
  default_language: string;
}

/** What the channels need of the process beyond the context: its pooled SMTP connections. */
export interface ChannelContext extends Context {
  readonly smtp: SmtpPool;
}

export interface DeliveryContext {
  runtime: ChannelContext;
  /**
   * Inside the delivery's transaction (the event row, or for remote channels in the per-event run the
   * delivery row, is locked); in the batched remote run, a connection of its own, while the run's
   * transaction holds the delivery row locked (or, when it sends before storing any delivery, the event).
   */
  em: EntityManager;
  delivery: DeliveryRow;
  event: EventForDelivery;
  contact: ContactRow;
  /** Variables with the decrypted secret ones merged in: for rendering only, never logged or stored. */
  renderVariables: Record<string, unknown>;
  /** Templates found so far in this run (the render stage's cache). */
  templates: TemplateCache;
  /**
   * What a run looks up once for all its deliveries (a tenant's transports, DKIM keys): the batched
   * remote run shares one over its batch, so a change to a transport applies from the next batch on.
   */
  lookups?: RunLookups;
}

/** Lookups of a run, by key; a failed lookup is forgotten, so the next delivery asks again. */
export type RunLookups = Map<string, Promise<unknown>>;

/** `load()`, once per key for the run's `lookups`, or every time without them. */
export function lookupOnce<T>(lookups: RunLookups | undefined, key: string, load: () => Promise<T>): Promise<T> {
  if (!lookups) return load();
  let found = lookups.get(key) as Promise<T> | undefined;
  if (!found) {
    found = load();
    found.catch(() => lookups.delete(key));
    lookups.set(key, found);
  }
  return found;
}

export interface ChannelSender {
  readonly channel: Channel;
  /** A database-only channel (the inbox): delivered inside the event's transaction, under a savepoint. */
  readonly local?: boolean;
  deliver(context: DeliveryContext): Promise<DeliveryOutcome>;
  /**
   * Fills `lookups` with what deliver() would look up per delivery, for a whole batch in one statement
   * (the batched remote run); deliver() still looks up whatever is missing.
   */
  preload?(
    em: EntityManager,
    deliveries: Array<{ delivery: DeliveryRow; event: EventForDelivery; contact: ContactRow }>,
    lookups: RunLookups,
  ): Promise<void>;
}

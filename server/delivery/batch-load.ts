// The read side of the batch fast path (batch.ts): one statement that loads a batch's events with
// everything planning and rendering need. It is lockEvents and loadContacts of worker.ts, minus the
// lock (the store statement checks the events itself, batch-store.ts), plus the brand lookups of
// delivery/templates.ts, in one round trip.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { CONTACT_COLUMNS } from '../services/contact-upsert.ts';
import type { BrandRow } from '../templates/resolve.ts';
import { eventPlannedSql, eventTypeJoin, type ContactWithDestinations, type LoadedEvent } from './worker.ts';

export interface BatchEvent extends LoadedEvent {
  contact: ContactWithDestinations | null;
  /** The brand to render with: the event's, or the tenant's default when none was named or it has been deleted since. */
  brand: BrandRow | null;
  default_brand_key: string | null;
  default_language: string;
}

/**
 * Loads the events with their type's policy, contact, preferences for the type, push subscriptions
 * and brands. It locks nothing: what it read may have changed by the time the batch is stored, which
 * the store statement finds out (batch-store.ts).
 *
 * What depends only on the tenant, the type and the brand (the tenant's state, the type's policy, the
 * brands) is looked up once per distinct (tenant, type, brand) of the batch, not once per event: a
 * batch is mostly one tenant's events of one type, and per event these lookups were about a third of
 * the statement's time (EXPLAIN ANALYZE, 250 events).
 */
export async function loadBatch(em: EntityManager, eventIds: string[]): Promise<BatchEvent[]> {
  return query<BatchEvent>(
    em,
    `WITH ev AS MATERIALIZED (
       SELECT id, tenant_id, type_key, brand_key, external_id, variables, status, channels, contact_id, secret_variables_ciphertext
         FROM events WHERE id = ANY($1::uuid[])
     ), kinds AS MATERIALIZED (
       SELECT k.tenant_id, k.type_key, k.brand_key,
              t.archived_at IS NOT NULL AS tenant_archived, t.default_language,
              nt.channel_defaults, nt.opt_out,
              (SELECT json_build_object('id', b.id, 'key', b.key, 'values', b."values", 'sender', b.sender, 'is_default', b.is_default)
                 FROM brands b
                WHERE b.tenant_id = k.tenant_id AND (b.key = k.brand_key OR b.is_default)
                ORDER BY b.is_default -- the named brand before the default
                LIMIT 1) AS brand,
              (SELECT key FROM brands WHERE tenant_id = k.tenant_id AND is_default) AS default_brand_key
         FROM (SELECT DISTINCT tenant_id, type_key, brand_key FROM ev) AS k
         JOIN tenants t ON t.id = k.tenant_id
         ${eventTypeJoin('k')}
     )
     SELECT ev.*, kinds.tenant_archived, kinds.default_language, kinds.channel_defaults, kinds.opt_out, kinds.brand, kinds.default_brand_key,
            ${eventPlannedSql('ev')} AS planned,
            (SELECT row_to_json(c) FROM (
               SELECT ${CONTACT_COLUMNS},
                      coalesce((SELECT json_agg(json_build_object('type_key', p.type_key, 'channel', p.channel, 'enabled', p.enabled))
                                  FROM contact_preferences p WHERE p.contact_id = contacts.id AND p.type_key = ev.type_key), '[]') AS preferences,
                      coalesce((SELECT json_agg(json_build_object('id', s.id, 'provider', s.provider) ORDER BY s.created_at)
                                  FROM push_subscriptions s WHERE s.contact_id = contacts.id), '[]') AS subscriptions
                 FROM contacts WHERE contacts.id = ev.contact_id
             ) c) AS contact
       FROM ev
       JOIN kinds ON kinds.tenant_id = ev.tenant_id AND kinds.type_key = ev.type_key AND kinds.brand_key IS NOT DISTINCT FROM ev.brand_key
      ORDER BY ev.id`,
    [eventIds],
  );
}

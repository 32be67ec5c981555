// Push destinations of contacts. A destination (device token, or browser endpoint) belongs to one
// contact of a tenant at a time: registering it again for the same contact is a no-op (200), and
// registering it for another contact moves it (a device changed hands, e.g. a new sign-in).
import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { invalidField, notFound } from '../../base/errors.ts';
import { resolvesOnlyPrivately } from '../../base/net/public-address.ts';
import { allowsPrivate } from '../../base/net/allow-private.ts';
import { newId } from '../../base/ids.ts';
import { execute, query, queryOne } from '../../base/db/sql.ts';
import type { CreatePushSubscriptionRequest, PushSubscriptionResponse } from '../../schemas/push-subscriptions.ts';
import { toIsoTimestamp, toIsoTimestampOrNull } from '../../base/timestamps.ts';

interface PushSubscriptionRow {
  id: string;
  provider: PushSubscriptionResponse['provider'];
  token: string | null;
  endpoint: string | null;
  created_at: Date;
  last_used_at: Date | null;
}

const COLUMNS = 'id, provider, token, endpoint, created_at, last_used_at';

/** Upserts the destination $8 (its hash); says which contact it belonged to before, if any. */
const REGISTER_SUBSCRIPTION = `WITH previous AS (
       SELECT contact_id FROM push_subscriptions WHERE tenant_id = $2 AND provider = $4 AND destination_hash = $8
     ), upserted AS (
       INSERT INTO push_subscriptions AS s (id, tenant_id, contact_id, provider, token, endpoint, keys, destination_hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (tenant_id, provider, destination_hash) DO UPDATE
         SET contact_id = EXCLUDED.contact_id, keys = EXCLUDED.keys, token = EXCLUDED.token, endpoint = EXCLUDED.endpoint
       RETURNING ${COLUMNS}
     )
     SELECT upserted.*, (SELECT contact_id FROM previous) AS previous_contact_id FROM upserted`;
const LIST_SUBSCRIPTIONS = `SELECT ${COLUMNS} FROM push_subscriptions WHERE contact_id = $1 ORDER BY id`;
const DELETE_SUBSCRIPTION = `DELETE FROM push_subscriptions WHERE id = $1 AND contact_id = $2`;

/**
 * A data-modifying CTE over the relation `recorded` (channel, destination, status of the deliveries
 * the store stage just stored or recorded, delivery/stages/store.ts): a push subscription a delivery
 * was sent to was last used now. To the minute, as a service key's: a device that receives many
 * pushes costs one row write a minute, not one per push. The CASE keeps the uuid cast away from
 * other channels' destinations (email addresses).
 */
export const touchSentSubscriptionsSql = (
  recorded: string,
): string => `UPDATE push_subscriptions s SET last_used_at = now()
    FROM ${recorded} r
   WHERE r.status = 'sent' AND s.id = CASE WHEN r.channel IN ('push', 'web_push') THEN r.destination::uuid END
     AND (s.last_used_at IS NULL OR s.last_used_at < now() - interval '60 seconds')`;

export function toPushSubscriptionResponse(row: PushSubscriptionRow): PushSubscriptionResponse {
  return {
    id: row.id,
    provider: row.provider,
    token: row.token,
    endpoint: row.endpoint,
    created_at: toIsoTimestamp(row.created_at),
    last_used_at: toIsoTimestampOrNull(row.last_used_at),
  };
}

/** The identity of a destination: the token, or the endpoint URL (its keys may be refreshed). */
function destinationHash(input: CreatePushSubscriptionRequest): string {
  const destination = input.provider === 'webpush' ? input.subscription.endpoint : input.token;
  return createHash('sha256').update(destination, 'utf8').digest('hex');
}

/** Why a web push endpoint is refused at registration, naming the setting that allows private ones. */
export const PUSH_ENDPOINT_REFUSED = `must reach a public address ${allowsPrivate('allowPrivatePushEndpoints')}`;

/**
 * Registers a destination; `created` is false when it already belonged to this contact. A web push
 * endpoint comes from a browser: one that reaches only private addresses (a metadata service, the
 * host's own network) is refused here, unless `allowPrivate`; the send checks again as it connects
 * (web-push/provider.ts).
 */
export async function registerPushSubscription(
  em: EntityManager,
  tenantId: string,
  contactId: string,
  input: CreatePushSubscriptionRequest,
  allowPrivate: boolean,
): Promise<{ subscription: PushSubscriptionResponse; created: boolean }> {
  const web = input.provider === 'webpush' ? input.subscription : null;
  if (web && !allowPrivate && (await resolvesOnlyPrivately(new URL(web.endpoint).hostname)))
    throw invalidField(['body', 'subscription', 'endpoint'], PUSH_ENDPOINT_REFUSED);
  const row = await queryOne<PushSubscriptionRow & { previous_contact_id: string | null }>(em, REGISTER_SUBSCRIPTION, [
    newId(),
    tenantId,
    contactId,
    input.provider,
    web ? null : (input as { token: string }).token,
    web?.endpoint ?? null,
    web ? JSON.stringify(web.keys) : null,
    destinationHash(input),
  ]);
  return { subscription: toPushSubscriptionResponse(row!), created: row!.previous_contact_id !== contactId };
}

export async function listPushSubscriptions(em: EntityManager, contactId: string): Promise<PushSubscriptionResponse[]> {
  const rows = await query<PushSubscriptionRow>(em, LIST_SUBSCRIPTIONS, [contactId]);
  return rows.map(toPushSubscriptionResponse);
}

export async function deletePushSubscription(
  em: EntityManager,
  contactId: string,
  subscriptionId: string,
): Promise<void> {
  const deleted = await execute(em, DELETE_SUBSCRIPTION, [subscriptionId, contactId]);
  if (deleted === 0) throw notFound('Push subscription');
}

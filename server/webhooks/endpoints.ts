// Outbound webhook endpoints of a tenant: create (the secret is shown once), list, get, update,
// delete, rotate the secret, send a test ping; and the endpoint's deliveries (the attempts log) with a
// manual retry. Secrets are stored encrypted with the key ring and never returned after creation or
// rotation. URLs must reach public addresses unless allowPrivateWebhookUrls is set.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute, query, queryOne, toIsoTimestamp } from '../base/db/sql.ts';
import { invalidField, notFound } from '../base/errors.ts';
import { newId, isUuid } from '../base/ids.ts';
import { hostRefusal } from '../base/net/public-address.ts';
import { allowsPrivate } from '../base/net/allow-private.ts';
import type { Context } from '../base/context.ts';
import type {
  CreateWebhookRequest,
  UpdateWebhookRequest,
  WebhookDeliveryListQuery,
  WebhookDeliveryResponse,
  WebhookEventType,
  WebhookResponse,
} from '../schemas/webhooks.ts';
import { emitToEndpoint } from './emit.ts';
import { newWebhookSecret } from './signing.ts';
import { webhookSecretAad } from '../base/crypto/aad.ts';

interface EndpointRow {
  id: string;
  url: string;
  description: string;
  event_types: WebhookEventType[];
  enabled: boolean;
  disabled_reason: string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

const COLUMNS = 'id, url, description, event_types, enabled, disabled_reason, created_at, updated_at';
const DELIVERY_COLUMNS =
  'id, seq::text AS seq, event_type, status, attempts, last_status_code, last_error, next_attempt_at, created_at';

const INSERT_ENDPOINT = `INSERT INTO webhook_endpoints (id, tenant_id, url, description, event_types, secret_ciphertext)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`;
const LIST_ENDPOINTS = `SELECT ${COLUMNS} FROM webhook_endpoints
  WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id > $2) ORDER BY id LIMIT $3`;
const GET_ENDPOINT = `SELECT ${COLUMNS} FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2`;
const UPDATE_ENDPOINT = `UPDATE webhook_endpoints SET
        url = coalesce($3, url), event_types = coalesce($4, event_types), description = coalesce($5, description),
        enabled = coalesce($6, enabled),
        disabled_reason = CASE WHEN $6 IS NULL THEN disabled_reason WHEN $6 THEN NULL
          ELSE coalesce(disabled_reason, 'disabled') END,
        failing_since = CASE WHEN $6 THEN NULL ELSE failing_since END,
        updated_at = now()
      WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`;
const DELETE_ENDPOINT = `DELETE FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2`;
const ROTATE_ENDPOINT_SECRET = `UPDATE webhook_endpoints SET secret_ciphertext = $3, updated_at = now()
  WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`;
const GET_DELIVERY = `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = $1`;
const LIST_ENDPOINT_DELIVERIES = `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
      WHERE endpoint_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::bigint IS NULL OR seq < $3)
      ORDER BY seq DESC LIMIT $4`;
const RETRY_DELIVERY = `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), updated_at = now()
          WHERE id = $1 AND endpoint_id = $2 RETURNING ${DELIVERY_COLUMNS}`;

function toWebhookResponse(row: EndpointRow): WebhookResponse {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    event_types: row.event_types,
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    created_at: toIsoTimestamp(row.created_at),
    updated_at: toIsoTimestamp(row.updated_at),
  };
}

export const WEBHOOK_URL_REFUSED = `the URL must reach a public address ${allowsPrivate('allowPrivateWebhookUrls')}`;

async function checkUrl(runtime: Context, url: string): Promise<void> {
  if (runtime.config.allowPrivateWebhookUrls) return;
  const options = { dnsServers: runtime.config.dnsServers };
  const refusal = await hostRefusal(new URL(url).hostname, options, WEBHOOK_URL_REFUSED);
  if (refusal) throw invalidField(['body', 'url'], refusal);
}

export async function createWebhook(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  input: CreateWebhookRequest,
): Promise<WebhookResponse & { secret: string }> {
  await checkUrl(runtime, input.url);
  const id = newId();
  const secret = newWebhookSecret();
  const row = await queryOne<EndpointRow>(em, INSERT_ENDPOINT, [
    id,
    tenantId,
    input.url,
    input.description,
    input.event_types,
    runtime.keyRing.encrypt(secret, webhookSecretAad(id)),
  ]);
  return { ...toWebhookResponse(row!), secret };
}

export async function listWebhooks(
  em: EntityManager,
  tenantId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<{ items: WebhookResponse[]; next_cursor: string | null }> {
  if (page.cursor !== undefined && !isUuid(page.cursor))
    throw invalidField(['query', 'cursor'], 'must be a cursor from next_cursor');
  const rows = await query<EndpointRow>(em, LIST_ENDPOINTS, [tenantId, page.cursor ?? null, page.limit + 1]);
  const items = rows.slice(0, page.limit).map(toWebhookResponse);
  return { items, next_cursor: rows.length > page.limit ? items[items.length - 1]!.id : null };
}

async function findEndpoint(em: EntityManager, tenantId: string, id: string): Promise<EndpointRow> {
  const row = isUuid(id) ? await queryOne<EndpointRow>(em, GET_ENDPOINT, [tenantId, id]) : undefined;
  if (!row) throw notFound('Webhook');
  return row;
}

export async function getWebhook(em: EntityManager, tenantId: string, id: string): Promise<WebhookResponse> {
  return toWebhookResponse(await findEndpoint(em, tenantId, id));
}

export async function updateWebhook(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  id: string,
  input: UpdateWebhookRequest,
): Promise<WebhookResponse> {
  await findEndpoint(em, tenantId, id);
  if (input.url !== undefined) await checkUrl(runtime, input.url);
  const row = await queryOne<EndpointRow>(em, UPDATE_ENDPOINT, [
    tenantId,
    id,
    input.url ?? null,
    input.event_types ?? null,
    input.description ?? null,
    input.enabled ?? null,
  ]);
  return toWebhookResponse(row!);
}

export async function deleteWebhook(em: EntityManager, tenantId: string, id: string): Promise<void> {
  const removed = isUuid(id) ? await execute(em, DELETE_ENDPOINT, [tenantId, id]) : 0;
  if (removed === 0) throw notFound('Webhook');
}

/** A new secret replaces the old one at once; answers it this once. */
export async function rotateWebhookSecret(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  id: string,
): Promise<WebhookResponse & { secret: string }> {
  await findEndpoint(em, tenantId, id);
  const secret = newWebhookSecret();
  const row = await queryOne<EndpointRow>(em, ROTATE_ENDPOINT_SECRET, [
    tenantId,
    id,
    runtime.keyRing.encrypt(secret, webhookSecretAad(id)),
  ]);
  return { ...toWebhookResponse(row!), secret };
}

interface WebhookDeliveryRow {
  id: string;
  seq: string;
  event_type: WebhookEventType;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date | string;
  created_at: Date | string;
}

function toWebhookDeliveryResponse(row: WebhookDeliveryRow): WebhookDeliveryResponse {
  return {
    id: row.id,
    event_type: row.event_type,
    status: row.status,
    attempts: row.attempts,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    next_attempt_at: row.status === 'pending' ? toIsoTimestamp(row.next_attempt_at) : null,
    created_at: toIsoTimestamp(row.created_at),
  };
}

/** Sends `webhook.test` to the endpoint (even one that does not list the type); answers its delivery. */
export async function testWebhook(em: EntityManager, tenantId: string, id: string): Promise<WebhookDeliveryResponse> {
  await findEndpoint(em, tenantId, id);
  const deliveryId = await emitToEndpoint(em, tenantId, id, 'webhook.test', {
    webhook_id: id,
    message: 'a test event from Herald',
  });
  const row = await queryOne<WebhookDeliveryRow>(em, GET_DELIVERY, [deliveryId]);
  return toWebhookDeliveryResponse(row!);
}

export async function listWebhookDeliveries(
  em: EntityManager,
  tenantId: string,
  id: string,
  filter: WebhookDeliveryListQuery,
): Promise<{ items: WebhookDeliveryResponse[]; next_cursor: string | null }> {
  await findEndpoint(em, tenantId, id);
  const rows = await query<WebhookDeliveryRow>(em, LIST_ENDPOINT_DELIVERIES, [
    id,
    filter.status ?? null,
    filter.cursor ?? null,
    filter.limit + 1,
  ]);
  const page = rows.slice(0, filter.limit);
  return {
    items: page.map(toWebhookDeliveryResponse),
    next_cursor: rows.length > filter.limit ? page[page.length - 1]!.seq : null,
  };
}

/** Makes a delivery due now: one more attempt for a failed one, a resend for a succeeded one. */
export async function retryWebhookDelivery(
  em: EntityManager,
  tenantId: string,
  id: string,
  deliveryId: string,
): Promise<WebhookDeliveryResponse> {
  await findEndpoint(em, tenantId, id);
  const row = isUuid(deliveryId) ? await queryOne<WebhookDeliveryRow>(em, RETRY_DELIVERY, [deliveryId, id]) : undefined;
  if (!row) throw notFound('Webhook delivery');
  return toWebhookDeliveryResponse(row);
}

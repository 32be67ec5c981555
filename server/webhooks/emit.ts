// Emitting a webhook event: one outbox row per enabled endpoint of the tenant that listens for the
// type, written with the caller's EntityManager, so inside the transaction of the change it reports.
// Delivery and event status changes are emitted by database triggers instead (emit-triggers.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../base/db/sql.ts';
import type { WebhookEventType } from '../schemas/webhooks.ts';

const BODY = `jsonb_build_object('type', $2::text, 'timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', $3::jsonb)`;

const EMIT_TO_LISTENERS = `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_type, payload)
     SELECT tenant_id, id, $2, ${BODY} FROM webhook_endpoints
      WHERE tenant_id = $1 AND enabled AND $2 = ANY (event_types)`;
const EMIT_TO_ENDPOINT = `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_type, payload)
     SELECT tenant_id, id, $2, ${BODY} FROM webhook_endpoints WHERE tenant_id = $1 AND id = $4
     RETURNING id`;

export async function emitWebhookEvent(
  em: EntityManager,
  tenantId: string,
  type: WebhookEventType,
  data: Record<string, unknown>,
): Promise<void> {
  await query(em, EMIT_TO_LISTENERS, [tenantId, type, JSON.stringify(data)]);
}

/** One event for one endpoint, whatever types it listens for (the test ping); the outbox row's id. */
export async function emitToEndpoint(
  em: EntityManager,
  tenantId: string,
  endpointId: string,
  type: WebhookEventType,
  data: Record<string, unknown>,
): Promise<string | null> {
  const rows = await query<{ id: string }>(em, EMIT_TO_ENDPOINT, [tenantId, type, JSON.stringify(data), endpointId]);
  return rows[0]?.id ?? null;
}

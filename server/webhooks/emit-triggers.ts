// Webhook emission by the database: delivery status changes (delivery.*) and events reaching a final
// status (event.completed) are reported by triggers that write the outbox rows in the changing
// statement's own transaction, so a rolled-back change leaves no webhook and a committed one always
// has its rows. They are statement-level (one call per batch statement, reading the changed rows from
// transition tables) and return at once while no enabled endpoint listens for their types. Every other
// webhook event is written by emit.ts. The baseline migration creates these from here.
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../schemas/webhooks.ts';
import { FINAL_EVENT_STATUSES } from '../base/statuses.ts';

const literal = (value: string): string => `'${value.replaceAll("'", "''")}'`;
const list = (values: Iterable<string>): string => [...values].map(literal).join(', ');
/** A webhook event type as an SQL literal: only the types the API declares compile. */
const type = (name: WebhookEventType): string => literal(name);

const DELIVERY_TYPES = WEBHOOK_EVENT_TYPES.filter((name) => name.startsWith('delivery.'));
const FINAL = list(FINAL_EVENT_STATUSES);

/** The webhook body's timestamp: RFC 3339 UTC with milliseconds. */
const NOW_ISO = `to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The functions, then the triggers that call them, one statement each. */
export const WEBHOOK_TRIGGER_SQL: readonly string[] = [
  `
      CREATE FUNCTION herald_webhooks_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM webhook_endpoints
                        WHERE enabled AND event_types && ARRAY[${list(DELIVERY_TYPES)}]) THEN
          RETURN NULL;
        END IF;
        IF TG_OP = 'INSERT' THEN
          INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_type, payload)
          SELECT n.tenant_id, w.id, t.type, herald_webhook_delivery_body(t.type, n.id, n.event_id, n.channel, n.status, n.reason, n.provider, n.last_error)
            FROM new_rows n
           CROSS JOIN LATERAL (SELECT herald_webhook_delivery_type(n.status) AS type) t
            JOIN webhook_endpoints w ON w.tenant_id = n.tenant_id AND w.enabled AND t.type = ANY (w.event_types);
        ELSE
          INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_type, payload)
          SELECT n.tenant_id, w.id, t.type, herald_webhook_delivery_body(t.type, n.id, n.event_id, n.channel, n.status, n.reason, n.provider, n.last_error)
            FROM new_rows n
            JOIN old_rows o ON o.id = n.id AND o.status IS DISTINCT FROM n.status
           CROSS JOIN LATERAL (SELECT herald_webhook_delivery_type(n.status) AS type) t
            JOIN webhook_endpoints w ON w.tenant_id = n.tenant_id AND w.enabled AND t.type = ANY (w.event_types);
        END IF;
        RETURN NULL;
      END $$`,
  `
      CREATE FUNCTION herald_webhook_delivery_type(status text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE status WHEN 'sent' THEN ${type('delivery.sent')} WHEN 'delivered' THEN ${type('delivery.sent')}
                           WHEN 'failed' THEN ${type('delivery.failed')} WHEN 'skipped' THEN ${type('delivery.skipped')} END
      $$`,
  `
      CREATE FUNCTION herald_webhook_delivery_body(type text, delivery_id uuid, event_id uuid, channel text, status text,
                                                   reason text, provider text, error text) RETURNS jsonb LANGUAGE sql STABLE AS $$
        SELECT jsonb_build_object('type', type, 'timestamp', ${NOW_ISO}, 'data', jsonb_build_object(
          'delivery_id', delivery_id, 'event_id', event_id, 'channel', channel, 'status', status,
          'reason', reason, 'provider', provider, 'error', error))
      $$`,
  `
      CREATE FUNCTION herald_webhooks_events() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled AND ${type('event.completed')} = ANY (event_types)) THEN
          RETURN NULL;
        END IF;
        INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_type, payload)
        SELECT n.tenant_id, w.id, ${type('event.completed')},
               jsonb_build_object('type', ${type('event.completed')}, 'timestamp', ${NOW_ISO}, 'data', jsonb_build_object(
                 'event_id', n.id, 'type', n.type_key, 'external_id', n.external_id, 'contact_id', n.contact_id, 'status', n.status))
          FROM new_rows n
          JOIN old_rows o ON o.id = n.id
          JOIN webhook_endpoints w ON w.tenant_id = n.tenant_id AND w.enabled AND ${type('event.completed')} = ANY (w.event_types)
         WHERE n.status IN (${FINAL}) AND o.status NOT IN (${FINAL});
        RETURN NULL;
      END $$`,
  `
      CREATE TRIGGER deliveries_webhooks_insert AFTER INSERT ON deliveries
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_webhooks_deliveries()`,
  `
      CREATE TRIGGER deliveries_webhooks_update AFTER UPDATE ON deliveries
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_webhooks_deliveries()`,
  `
      CREATE TRIGGER events_webhooks_update AFTER UPDATE ON events
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_webhooks_events()`,
];

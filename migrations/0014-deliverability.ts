// Deliverability: outbound webhook endpoints and their outbox (webhook_deliveries, which is also the
// attempts log), the email suppression list with the bounces and complaints behind it, and the
// delivery statuses 'bounced' and 'complained'.
//
// Delivery and event state changes are reported by triggers that write the outbox rows in the
// changing statement's own transaction: a rolled-back change leaves no webhook, a committed one
// always has its rows. They are statement-level (one call per batch statement, reading the changed
// rows from transition tables) and return at once while no enabled endpoint listens for their types.
import { Migration } from '@mikro-orm/migrations';

const DELIVERY_STATUSES = `'pending', 'sent', 'delivered', 'failed', 'skipped', 'bounced', 'complained'`;
const FINAL_EVENT_STATUSES = `'delivered', 'partially_delivered', 'failed', 'skipped', 'canceled', 'digested'`;

/** The webhook body's timestamp: RFC 3339 UTC with milliseconds. */
const NOW_ISO = `to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export class Deliverability extends Migration {
  override name = '0014-deliverability';

  up(): void {
    this.addSql(`
      CREATE TABLE webhook_endpoints (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        url text NOT NULL,
        description text NOT NULL DEFAULT '',
        event_types text[] NOT NULL,
        secret_ciphertext text NOT NULL,
        enabled boolean NOT NULL DEFAULT true,
        disabled_reason text,
        failing_since timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, created_at, id)`);
    this.addSql(`
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        seq bigint GENERATED ALWAYS AS IDENTITY,
        tenant_id uuid NOT NULL,
        endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        event_type text NOT NULL,
        payload jsonb NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        last_status_code integer,
        last_error text,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`);
    this.addSql(`CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, seq DESC)`);

    this.addSql(`
      CREATE TABLE email_suppressions (
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        email text NOT NULL,
        reason text NOT NULL CHECK (reason IN ('hard_bounce', 'soft_bounces', 'complaint', 'manual')),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, email)
      )`);
    this.addSql(`
      CREATE TABLE email_feedback (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        delivery_id uuid,
        email text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('hard_bounce', 'soft_bounce', 'complaint')),
        detail text,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`CREATE INDEX email_feedback_address ON email_feedback (tenant_id, email, created_at)`);

    this.addSql(`ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check`);
    this.addSql(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN (${DELIVERY_STATUSES}))`);

    this.addSql(`
      CREATE FUNCTION herald_webhooks_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM webhook_endpoints
                        WHERE enabled AND event_types && ARRAY['delivery.sent', 'delivery.failed', 'delivery.skipped']) THEN
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
      END $$`);
    this.addSql(`
      CREATE FUNCTION herald_webhook_delivery_type(status text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE status WHEN 'sent' THEN 'delivery.sent' WHEN 'delivered' THEN 'delivery.sent'
                           WHEN 'failed' THEN 'delivery.failed' WHEN 'skipped' THEN 'delivery.skipped' END
      $$`);
    this.addSql(`
      CREATE FUNCTION herald_webhook_delivery_body(type text, delivery_id uuid, event_id uuid, channel text, status text,
                                                   reason text, provider text, error text) RETURNS jsonb LANGUAGE sql STABLE AS $$
        SELECT jsonb_build_object('type', type, 'timestamp', ${NOW_ISO}, 'data', jsonb_build_object(
          'delivery_id', delivery_id, 'event_id', event_id, 'channel', channel, 'status', status,
          'reason', reason, 'provider', provider, 'error', error))
      $$`);
    this.addSql(`
      CREATE FUNCTION herald_webhooks_events() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled AND 'event.completed' = ANY (event_types)) THEN
          RETURN NULL;
        END IF;
        INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_type, payload)
        SELECT n.tenant_id, w.id, 'event.completed',
               jsonb_build_object('type', 'event.completed', 'timestamp', ${NOW_ISO}, 'data', jsonb_build_object(
                 'event_id', n.id, 'type', n.type_key, 'external_id', n.external_id, 'contact_id', n.contact_id, 'status', n.status))
          FROM new_rows n
          JOIN old_rows o ON o.id = n.id
          JOIN webhook_endpoints w ON w.tenant_id = n.tenant_id AND w.enabled AND 'event.completed' = ANY (w.event_types)
         WHERE n.status IN (${FINAL_EVENT_STATUSES}) AND o.status NOT IN (${FINAL_EVENT_STATUSES});
        RETURN NULL;
      END $$`);
    this.addSql(`
      CREATE TRIGGER deliveries_webhooks_insert AFTER INSERT ON deliveries
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_webhooks_deliveries()`);
    this.addSql(`
      CREATE TRIGGER deliveries_webhooks_update AFTER UPDATE ON deliveries
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_webhooks_deliveries()`);
    this.addSql(`
      CREATE TRIGGER events_webhooks_update AFTER UPDATE ON events
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_webhooks_events()`);
  }

  override down(): void {
    this.addSql(`DROP TRIGGER events_webhooks_update ON events`);
    this.addSql(`DROP TRIGGER deliveries_webhooks_update ON deliveries`);
    this.addSql(`DROP TRIGGER deliveries_webhooks_insert ON deliveries`);
    this.addSql(`DROP FUNCTION herald_webhooks_events(), herald_webhooks_deliveries(), herald_webhook_delivery_body(text, uuid, uuid, text, text, text, text, text), herald_webhook_delivery_type(text)`);
    this.addSql(`DELETE FROM deliveries WHERE status IN ('bounced', 'complained')`);
    this.addSql(`ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check`);
    this.addSql(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending', 'sent', 'delivered', 'failed', 'skipped'))`);
    this.addSql(`DROP TABLE email_feedback, email_suppressions, webhook_deliveries, webhook_endpoints`);
  }
}

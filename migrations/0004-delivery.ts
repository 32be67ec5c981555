// Delivery: contacts (with preferences and push subscriptions), events and their per-channel
// deliveries, inbox items, the per-contact stream log (for Last-Event-ID replay) and idempotency records.
import { Migration } from '@mikro-orm/migrations';

export class Delivery extends Migration {
  override name = '0004-delivery';

  up(): void {
    this.addSql(`
      CREATE TABLE contacts (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        external_id text NOT NULL,
        email text,
        phone text,
        name text,
        language text,
        properties jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, external_id)
      )`);
    // Only explicit choices are stored; the matrix answers "default" for everything else.
    this.addSql(`
      CREATE TABLE contact_preferences (
        contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        type_key text NOT NULL,
        channel text NOT NULL CHECK (channel IN ('inbox', 'email', 'push', 'web_push')),
        enabled boolean NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (contact_id, type_key, channel)
      )`);
    // A destination (device token or browser endpoint) belongs to one contact of a tenant at a time.
    this.addSql(`
      CREATE TABLE push_subscriptions (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
        provider text NOT NULL CHECK (provider IN ('apns', 'fcm', 'expo', 'webpush')),
        token text,
        endpoint text,
        keys jsonb,
        destination_hash text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        UNIQUE (tenant_id, provider, destination_hash)
      )`);
    this.addSql(`CREATE INDEX push_subscriptions_contact ON push_subscriptions (contact_id)`);
    // One event per recipient of a trigger. secret_variables stay encrypted until delivered.
    this.addSql(`
      CREATE TABLE events (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        type_key text NOT NULL,
        contact_id uuid REFERENCES contacts (id) ON DELETE SET NULL,
        external_id text NOT NULL,
        brand_key text,
        channels text[],
        variables jsonb NOT NULL DEFAULT '{}',
        secret_variables_ciphertext text,
        secret_keys text[] NOT NULL DEFAULT '{}',
        status text NOT NULL DEFAULT 'queued'
          CHECK (status IN ('queued', 'processing', 'delivered', 'partially_delivered', 'failed', 'skipped')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`CREATE INDEX events_tenant_id ON events (tenant_id, id DESC)`);
    this.addSql(`CREATE INDEX events_tenant_type ON events (tenant_id, type_key, id DESC)`);
    this.addSql(`CREATE INDEX events_tenant_status ON events (tenant_id, status, id DESC)`);
    this.addSql(`CREATE INDEX events_tenant_external ON events (tenant_id, external_id, id DESC)`);
    // One row per (event, channel, destination): the unit of retry and of idempotency.
    this.addSql(`
      CREATE TABLE deliveries (
        id uuid PRIMARY KEY,
        event_id uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        channel text NOT NULL CHECK (channel IN ('inbox', 'email', 'push', 'web_push')),
        destination text NOT NULL DEFAULT '',
        provider text,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'delivered', 'failed', 'skipped')),
        reason text,
        attempts integer NOT NULL DEFAULT 0,
        last_error text,
        provider_message_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (event_id, channel, destination)
      )`);
    // delivery_id UNIQUE: a retried or duplicated job can never create a second inbox item.
    this.addSql(`
      CREATE TABLE inbox_items (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
        event_id uuid REFERENCES events (id) ON DELETE SET NULL,
        delivery_id uuid UNIQUE,
        type_key text NOT NULL,
        title text NOT NULL DEFAULT '',
        body text NOT NULL DEFAULT '',
        action_url text,
        data jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        seen_at timestamptz,
        read_at timestamptz,
        archived_at timestamptz
      )`);
    this.addSql(`CREATE INDEX inbox_items_contact ON inbox_items (contact_id, id DESC)`);
    this.addSql(`CREATE INDEX inbox_items_unread ON inbox_items (contact_id) WHERE read_at IS NULL AND archived_at IS NULL`);
    // The per-contact stream log: every SSE event has a row id; Last-Event-ID replays id > last.
    this.addSql(`
      CREATE TABLE stream_events (
        id bigserial PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('notification', 'updated', 'counts')),
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`CREATE INDEX stream_events_contact ON stream_events (contact_id, id)`);
    this.addSql(`CREATE INDEX stream_events_created ON stream_events (created_at)`);
    this.addSql(`
      CREATE TABLE idempotency_keys (
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        key text NOT NULL,
        request_hash text NOT NULL,
        state text NOT NULL DEFAULT 'in_flight' CHECK (state IN ('in_flight', 'done')),
        response_status integer,
        response_body jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, key)
      )`);
    this.addSql(`CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at)`);
  }

  override down(): void {
    this.addSql(`DROP TABLE IF EXISTS idempotency_keys, stream_events, inbox_items, deliveries, events, push_subscriptions, contact_preferences, contacts`);
  }
}

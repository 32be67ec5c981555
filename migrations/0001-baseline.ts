// The baseline: the whole schema as one migration (the development migrations 0001-0021 squashed
// before the first release). The webhook triggers come from server/webhooks/emit-triggers.ts and the
// status checks from server/base/statuses.ts, so each is declared once. Column order follows the
// squashed history, so the schema is identical to theirs (test/migrations/schema.test.ts holds it to
// migrations/schema.sql).
import { Migration } from '@mikro-orm/migrations';
import { DELIVERY_STATUSES, EVENT_STATUSES } from '../server/base/statuses.ts';
import { WEBHOOK_TRIGGER_SQL } from '../server/webhooks/emit-triggers.ts';

const list = (values: readonly string[]): string => values.map((value) => `'${value}'`).join(', ');

const CHANNELS = `'inbox', 'email', 'push', 'web_push'`;
const PUSH_PROVIDERS = `'apns', 'fcm', 'expo', 'webpush'`;

export class Baseline extends Migration {
  override name = '0001-baseline';

  up(): void {
    this.foundation();
    this.configuration();
    this.delivery();
    this.identity();
    this.orchestration();
    this.deliverability();
    this.audiences();
    this.console();
    this.functions();
  }

  /** Tenants and what every other part hangs off, plus the shared machinery tables. */
  private foundation(): void {
    // default_language: the template fallback between the contact's language and the default.
    this.addSql(`
      CREATE TABLE tenants (
        id uuid PRIMARY KEY,
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
        archived_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        default_language text NOT NULL DEFAULT 'en'
      )`);
    // Raised or lowered limits of one tenant: rate-limit policies ("rate:<policy>") and plan caps ("brands").
    this.addSql(`
      CREATE TABLE tenant_limits (
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        name text NOT NULL,
        value double precision NOT NULL CHECK (value >= 0),
        PRIMARY KEY (tenant_id, name)
      )`);
    this.addSql(`
      CREATE TABLE users (
        id uuid PRIMARY KEY,
        email text NOT NULL,
        password_hash text NOT NULL,
        email_verified_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`CREATE UNIQUE INDEX users_email_key ON users (lower(email))`);
    this.addSql(`
      CREATE TABLE memberships (
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('owner', 'admin')),
        is_default boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, tenant_id)
      )`);
    this.addSql(`CREATE UNIQUE INDEX memberships_one_default ON memberships (user_id) WHERE is_default`);
    this.addSql(`CREATE INDEX memberships_tenant ON memberships (tenant_id)`);
    this.addSql(`
      CREATE TABLE brands (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        key text NOT NULL,
        "values" jsonb NOT NULL DEFAULT '{}',
        sender jsonb NOT NULL DEFAULT '{}',
        is_default boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, key)
      )`);
    this.addSql(`CREATE UNIQUE INDEX brands_one_default ON brands (tenant_id) WHERE is_default`);
    // Service keys are stored as SHA-256 of the key: they carry 256 random bits, so a fast hash is safe
    // and lets a request find its key by index.
    this.addSql(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        name text NOT NULL,
        prefix text NOT NULL,
        key_hash bytea NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        revoked_at timestamptz
      )`);
    this.addSql(`CREATE INDEX api_keys_tenant ON api_keys (tenant_id)`);
    // Token buckets. UNLOGGED: a crash resets buckets to full, which is harmless, and saves WAL on a hot path.
    this.addSql(`
      CREATE UNLOGGED TABLE rate_limit_buckets (
        key text PRIMARY KEY,
        tokens double precision NOT NULL,
        updated_ms bigint NOT NULL
      )`);
    // Install-wide secrets (token signing key), encrypted with the key ring.
    this.addSql(`
      CREATE TABLE install_secrets (
        name text PRIMARY KEY,
        ciphertext text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  /** Notification types, templates, sender domains and transports. */
  private configuration(): void {
    this.addSql(`
      CREATE TABLE notification_types (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        key text NOT NULL,
        name text NOT NULL DEFAULT '',
        description text NOT NULL DEFAULT '',
        channel_defaults jsonb NOT NULL DEFAULT '{"inbox": true, "email": true, "push": false, "web_push": false}',
        opt_out boolean NOT NULL DEFAULT true,
        variables jsonb NOT NULL DEFAULT '[]',
        deleted_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        workflow jsonb,
        bypass_quiet_hours boolean NOT NULL DEFAULT false
      )`);
    // One live type per key; deleted ones keep their rows (restorable) and do not block the key.
    this.addSql(
      `CREATE UNIQUE INDEX notification_types_live_key ON notification_types (tenant_id, key) WHERE deleted_at IS NULL`,
    );
    this.addSql(`CREATE INDEX notification_types_tenant ON notification_types (tenant_id, key)`);
    // Templates fill a slot: type + brand + language. Deleting a brand deletes its templates.
    this.addSql(`
      CREATE TABLE email_templates (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        notification_type_key text NOT NULL,
        brand_key text NOT NULL,
        language text NOT NULL,
        subject text NOT NULL,
        content text NOT NULL CHECK (content <> ''),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, notification_type_key, brand_key, language),
        FOREIGN KEY (tenant_id, brand_key) REFERENCES brands (tenant_id, key) ON DELETE CASCADE
      )`);
    this.addSql(`
      CREATE TABLE inbox_templates (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        notification_type_key text NOT NULL,
        brand_key text NOT NULL,
        language text NOT NULL,
        title text NOT NULL DEFAULT '',
        content text NOT NULL CHECK (content <> ''),
        action_url text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, notification_type_key, brand_key, language),
        FOREIGN KEY (tenant_id, brand_key) REFERENCES brands (tenant_id, key) ON DELETE CASCADE
      )`);
    this.addSql(`
      CREATE TABLE sender_domains (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        domain text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified', 'failed')),
        dkim_selector text NOT NULL,
        dkim_public_key text NOT NULL,
        dkim_private_key_ciphertext text NOT NULL,
        last_checked_at timestamptz,
        last_error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, domain)
      )`);
    // One email transport per tenant, one push transport per tenant and provider. Non-secret settings
    // are plain columns/JSON; secret fields are one key-ring ciphertext each row.
    this.addSql(`
      CREATE TABLE email_transports (
        tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
        host text NOT NULL,
        port integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
        secure boolean NOT NULL DEFAULT false,
        username text,
        password_ciphertext text,
        from_email text NOT NULL,
        from_name text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`
      CREATE TABLE push_transports (
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        provider text NOT NULL CHECK (provider IN (${PUSH_PROVIDERS})),
        settings jsonb NOT NULL DEFAULT '{}',
        secrets_ciphertext text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, provider)
      )`);
  }

  /**
   * Contacts, events and their per-channel deliveries, inbox items, the stream log and idempotency
   * records. Deliveries, inbox items and stream events have no foreign key to their tenant or event,
   * and events none to their contact or tenant: every such row is written by a statement that holds
   * (locks or writes) what it references, so each key's per-row check (an index probe and a lock on
   * the hottest path) guarded nothing. What the keys did on a deletion is done by one trigger per
   * deleting statement (functions()).
   */
  private delivery(): void {
    // timezone, quiet_hours: the contact's quiet hours, in its own time zone.
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
        timezone text,
        quiet_hours jsonb,
        UNIQUE (tenant_id, external_id)
      )`);
    // Only explicit choices are stored; the matrix answers "default" for everything else.
    this.addSql(`
      CREATE TABLE contact_preferences (
        contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        type_key text NOT NULL,
        channel text NOT NULL CHECK (channel IN (${CHANNELS})),
        enabled boolean NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (contact_id, type_key, channel)
      )`);
    // A destination (device token or browser endpoint) belongs to one contact of a tenant at a time.
    // Fillfactor 70: a sent push rewrites its row (last_used_at) at most once a minute, and the room
    // left in the page keeps that update heap-only (no new entry in each index).
    this.addSql(`
      CREATE TABLE push_subscriptions (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
        provider text NOT NULL CHECK (provider IN (${PUSH_PROVIDERS})),
        token text,
        endpoint text,
        keys jsonb,
        destination_hash text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        UNIQUE (tenant_id, provider, destination_hash)
      ) WITH (fillfactor = 70)`);
    this.addSql(`CREATE INDEX push_subscriptions_contact ON push_subscriptions (contact_id)`);
    // One event per recipient of a trigger. secret_variables stay encrypted until delivered. send_at,
    // cancellation_key, steps (each step's definition as it was when the event started) and
    // digest_event_id (the opener of the digest it went into) are the workflow's; broadcast_id the
    // broadcast's. Status changes are heap-only updates: status is in no index, and half of each page
    // is left free (fillfactor 50) because a delivery batch updates the events of whole pages at once
    // (measured: 9,140 of 9,200 updates HOT at 50, 3,003 at 90).
    this.addSql(`
      CREATE TABLE events (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL,
        type_key text NOT NULL,
        contact_id uuid,
        external_id text NOT NULL,
        brand_key text,
        channels text[],
        variables jsonb NOT NULL DEFAULT '{}',
        secret_variables_ciphertext text,
        secret_keys text[] NOT NULL DEFAULT '{}',
        status text NOT NULL DEFAULT 'queued' CONSTRAINT events_status_check CHECK (status IN (${list(EVENT_STATUSES)})),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        send_at timestamptz,
        cancellation_key text,
        steps jsonb,
        digest_event_id uuid,
        broadcast_id uuid
      ) WITH (fillfactor = 50)`);
    this.addSql(`CREATE INDEX events_tenant_id ON events (tenant_id, id DESC)`);
    this.addSql(`CREATE INDEX events_tenant_type ON events (tenant_id, type_key, id DESC)`);
    this.addSql(`CREATE INDEX events_tenant_external ON events (tenant_id, external_id, id DESC)`);
    this.addSql(
      `CREATE INDEX events_cancellation_key ON events (tenant_id, cancellation_key) WHERE cancellation_key IS NOT NULL`,
    );
    // A broadcast's fan-out writes at most one event per contact, however often a page is retried.
    this.addSql(
      `CREATE UNIQUE INDEX events_broadcast_contact ON events (broadcast_id, contact_id) WHERE broadcast_id IS NOT NULL`,
    );
    // One row per (event, channel, destination): the unit of retry and of idempotency.
    this.addSql(`
      CREATE TABLE deliveries (
        id uuid PRIMARY KEY,
        event_id uuid NOT NULL,
        tenant_id uuid NOT NULL,
        channel text NOT NULL CHECK (channel IN (${CHANNELS})),
        destination text NOT NULL DEFAULT '',
        provider text,
        status text NOT NULL DEFAULT 'pending' CONSTRAINT deliveries_status_check CHECK (status IN (${list(DELIVERY_STATUSES)})),
        reason text,
        attempts integer NOT NULL DEFAULT 0,
        last_error text,
        provider_message_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (event_id, channel, destination)
      )`);
    // delivery_id UNIQUE: a retried or duplicated job can never create a second inbox item. An item is
    // its own 'notification' on the contact's stream: its stream_id comes from the stream log's
    // sequence, under the contact's stream lock, instead of a stream_events row holding a copy of it.
    this.addSql(`
      CREATE TABLE inbox_items (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL,
        contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
        event_id uuid,
        delivery_id uuid UNIQUE,
        type_key text NOT NULL,
        title text NOT NULL DEFAULT '',
        body text NOT NULL DEFAULT '',
        action_url text,
        data jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        seen_at timestamptz,
        read_at timestamptz,
        archived_at timestamptz,
        stream_id bigint
      )`);
    this.addSql(`CREATE INDEX inbox_items_contact ON inbox_items (contact_id, id DESC)`);
    this.addSql(
      `CREATE INDEX inbox_items_unread ON inbox_items (contact_id) WHERE read_at IS NULL AND archived_at IS NULL`,
    );
    this.addSql(`CREATE INDEX inbox_items_stream ON inbox_items (contact_id, stream_id) WHERE stream_id IS NOT NULL`);
    // The per-contact stream log: every SSE event has an id; Last-Event-ID replays id > last. Keyed by
    // (contact_id, id), as every read is one contact's events after an id; ids come from one sequence,
    // so they stay unique and ordered across contacts.
    this.addSql(`
      CREATE TABLE stream_events (
        id bigserial,
        tenant_id uuid NOT NULL,
        contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('notification', 'updated', 'counts')),
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (contact_id, id)
      )`);
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

  /**
   * Emailed link tokens (verification, password reset), invitations and data requests. Link tokens
   * are stored only as SHA-256 of 32 random bytes: the plaintext exists in the email alone.
   */
  private identity(): void {
    this.addSql(`
      CREATE TABLE email_tokens (
        id uuid PRIMARY KEY,
        purpose text NOT NULL CHECK (purpose IN ('verify', 'reset')),
        token_hash bytea NOT NULL UNIQUE,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        expires_at timestamptz NOT NULL,
        consumed_at timestamptz,
        created_at timestamptz NOT NULL
      )`);
    this.addSql(`CREATE INDEX email_tokens_user ON email_tokens (user_id, purpose, created_at DESC)`);
    this.addSql(`
      CREATE TABLE invitations (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        email text NOT NULL,
        role text NOT NULL CHECK (role = 'admin'),
        token_hash bytea NOT NULL UNIQUE,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'revoked')),
        expires_at timestamptz NOT NULL,
        invited_by uuid REFERENCES users (id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL,
        accepted_at timestamptz
      )`);
    this.addSql(
      `CREATE INDEX invitations_tenant_pending ON invitations (tenant_id, lower(email)) WHERE status = 'pending'`,
    );
    // No foreign key to tenants: a deletion request removes its tenant, and its own row must survive to
    // record that the deletion completed.
    this.addSql(`
      CREATE TABLE data_requests (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL,
        kind text NOT NULL CHECK (kind IN ('export', 'delete')),
        status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed')),
        file_path text,
        requested_by uuid REFERENCES users (id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL,
        completed_at timestamptz,
        error text
      )`);
    this.addSql(`CREATE INDEX data_requests_tenant ON data_requests (tenant_id, created_at DESC)`);
  }

  /** The open digest windows and the throttle's record of recent passes. */
  private orchestration(): void {
    // One row per digest window, keyed by the event that opened it; at most one open window per
    // (tenant, recipient, type, key).
    this.addSql(`
      CREATE TABLE digests (
        opener_event_id uuid PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        external_id text NOT NULL,
        type_key text NOT NULL,
        key text NOT NULL,
        window_end timestamptz NOT NULL,
        max_events integer NOT NULL,
        count integer NOT NULL,
        events jsonb NOT NULL,
        closed_at timestamptz
      )`);
    this.addSql(
      `CREATE UNIQUE INDEX digests_open ON digests (tenant_id, external_id, type_key, key) WHERE closed_at IS NULL`,
    );
    this.addSql(`
      CREATE TABLE throttle_hits (
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        external_id text NOT NULL,
        type_key text NOT NULL,
        key text NOT NULL,
        event_id uuid NOT NULL,
        at timestamptz NOT NULL
      )`);
    this.addSql(`CREATE INDEX throttle_hits_scope ON throttle_hits (tenant_id, external_id, type_key, key, at)`);
  }

  /**
   * Outbound webhook endpoints and their outbox (webhook_deliveries, which is also the attempts log),
   * the email suppression list and the bounces and complaints behind it.
   */
  private deliverability(): void {
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
  }

  /**
   * Topics (named lists of a tenant's contacts) and broadcasts (one notification type sent to a topic
   * or to every contact). A broadcast's events are ordinary events that carry its id. The fan-out's
   * position (the last audience key written) is stored on the broadcast row, in the statement that
   * writes the page's events, so a crashed fan-out resumes exactly there. A completed broadcast keeps
   * its final counts; a failed one (its fan-out out of retries) its reason.
   */
  private audiences(): void {
    this.addSql(`
      CREATE TABLE topics (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        key text NOT NULL,
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, key)
      )`);
    // Paged by (topic_id, contact_id): the subscriber list and a broadcast's fan-out walk the primary key.
    this.addSql(`
      CREATE TABLE topic_subscriptions (
        topic_id uuid NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
        contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (topic_id, contact_id)
      )`);
    this.addSql(`CREATE INDEX topic_subscriptions_contact ON topic_subscriptions (contact_id)`);
    this.addSql(`
      CREATE TABLE broadcasts (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        type_key text NOT NULL,
        audience jsonb NOT NULL,
        topic_id uuid REFERENCES topics (id) ON DELETE SET NULL,
        brand_key text,
        channels text[],
        variables jsonb NOT NULL DEFAULT '{}',
        secret_variables_ciphertext text,
        secret_keys text[] NOT NULL DEFAULT '{}',
        status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'canceled', 'failed')),
        send_at timestamptz,
        fan_out_cursor text,
        fanned_out_at timestamptz,
        targeted integer NOT NULL DEFAULT 0,
        events_created integer NOT NULL DEFAULT 0,
        final_counts jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz,
        failure_reason text
      )`);
    this.addSql(`CREATE INDEX broadcasts_tenant ON broadcasts (tenant_id, id DESC)`);
  }

  /**
   * The console's tables: the audit log of management writes, the SSO providers console users may sign
   * in with (client secrets sealed with the key ring) and the short-lived state of SSO sign-ins.
   */
  private console(): void {
    // tenant_id is null for install-level writes (CLI: users, tenants created on the host, SSO providers).
    this.addSql(`
      CREATE TABLE audit_log (
        id uuid PRIMARY KEY,
        tenant_id uuid REFERENCES tenants (id) ON DELETE CASCADE,
        at timestamptz NOT NULL DEFAULT now(),
        actor_kind text NOT NULL CHECK (actor_kind IN ('user', 'service_key', 'cli')),
        actor_id text,
        actor_email text,
        action text NOT NULL,
        target_kind text NOT NULL,
        target_id text,
        ip text,
        request_id text,
        changes jsonb
      )`);
    this.addSql(`CREATE INDEX audit_log_tenant_id ON audit_log (tenant_id, id DESC)`);
    this.addSql(`
      CREATE TABLE sso_providers (
        id uuid PRIMARY KEY,
        slug text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
        kind text NOT NULL,
        display_name text NOT NULL,
        client_id text NOT NULL,
        client_secret_ciphertext text NOT NULL,
        issuer text,
        base_url text,
        api_url text,
        allowed_domains text[] NOT NULL DEFAULT '{}',
        tenant_id uuid REFERENCES tenants (id) ON DELETE SET NULL,
        default_role text NOT NULL DEFAULT 'admin' CHECK (default_role IN ('admin', 'owner')),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    this.addSql(`
      CREATE TABLE sso_states (
        state_hash bytea PRIMARY KEY,
        provider_id uuid NOT NULL REFERENCES sso_providers (id) ON DELETE CASCADE,
        code_verifier text NOT NULL,
        binding_hash bytea NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
  }

  private functions(): void {
    // Service-key change notices: HTTP processes keep verified service keys in memory for a minute
    // (server/base/auth/service-key-cache.ts), so a revocation or a deletion, from whichever process
    // or command, must reach them at once. The payload is the key's id, never anything secret.
    this.addSql(`
      CREATE FUNCTION herald_api_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('herald_api_keys', OLD.id::text);
        RETURN NULL;
      END $$`);
    this.addSql(`
      CREATE TRIGGER api_keys_changed AFTER UPDATE OF revoked_at, key_hash, tenant_id OR DELETE ON api_keys
        FOR EACH ROW EXECUTE FUNCTION herald_api_key_changed()`);
    // herald_assert(ok, message): raises `message` unless `ok`. A statement that must be all or nothing
    // without a transaction around it (the delivery batch's store statement) checks its own outcome with
    // it in its final SELECT: the error undoes the whole statement, where a check in the caller would
    // come after the commit.
    this.addSql(`
      CREATE FUNCTION herald_assert(ok boolean, message text) RETURNS boolean LANGUAGE plpgsql AS $$
      BEGIN
        IF ok IS NOT TRUE THEN
          RAISE EXCEPTION USING MESSAGE = message, ERRCODE = 'P0004'; -- assert_failure
        END IF;
        RETURN true;
      END $$`);
    for (const sql of WEBHOOK_TRIGGER_SQL) this.addSql(sql);
    // A deleted event's deliveries go with it and its inbox items stay without it: what the dropped
    // foreign keys did, once per deleting statement.
    this.addSql(`
      CREATE FUNCTION herald_events_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM deliveries d USING deleted_events e WHERE d.event_id = e.id;
        UPDATE inbox_items i SET event_id = NULL FROM deleted_events e WHERE i.event_id = e.id;
        RETURN NULL;
      END $$`);
    this.addSql(`
      CREATE TRIGGER events_deleted AFTER DELETE ON events
        REFERENCING OLD TABLE AS deleted_events
        FOR EACH STATEMENT EXECUTE FUNCTION herald_events_deleted()`);
    // A deleted contact's events stay without it. Events have no index on their contact, so a query
    // per contact would read the whole table each time.
    this.addSql(`
      CREATE FUNCTION herald_contacts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE events e SET contact_id = NULL FROM deleted_contacts c WHERE e.contact_id = c.id;
        RETURN NULL;
      END $$`);
    this.addSql(`
      CREATE TRIGGER contacts_deleted AFTER DELETE ON contacts
        REFERENCING OLD TABLE AS deleted_contacts
        FOR EACH STATEMENT EXECUTE FUNCTION herald_contacts_deleted()`);
    // A deleted tenant's events go with it. Every event is written by a statement that locks its
    // tenant's row first (FOR KEY SHARE), so the deletion waits for those to commit at the tenant's row,
    // before its cascades take any contact or broadcast row such a statement would wait for in turn.
    // The trigger fires after the deletion's cascades and before the triggers those fire, so the
    // deletion of the tenant's contacts finds no event of theirs to clear.
    this.addSql(`
      CREATE FUNCTION herald_tenants_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM events e USING deleted_tenants t WHERE e.tenant_id = t.id;
        RETURN NULL;
      END $$`);
    this.addSql(`
      CREATE TRIGGER tenants_deleted AFTER DELETE ON tenants
        REFERENCING OLD TABLE AS deleted_tenants
        FOR EACH STATEMENT EXECUTE FUNCTION herald_tenants_deleted()`);
  }
}

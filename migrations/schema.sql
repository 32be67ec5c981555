-- The public schema the migrations produce (npm run schema:dump writes this file).

CREATE TABLE api_keys (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  name text NOT NULL,
  prefix text NOT NULL,
  key_hash bytea NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  last_used_at timestamp with time zone,
  revoked_at timestamp with time zone
);

CREATE TABLE audit_log (
  id uuid NOT NULL,
  tenant_id uuid,
  at timestamp with time zone NOT NULL DEFAULT now(),
  actor_kind text NOT NULL,
  actor_id text,
  actor_email text,
  action text NOT NULL,
  target_kind text NOT NULL,
  target_id text,
  ip text,
  request_id text,
  changes jsonb
);

CREATE TABLE brands (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  key text NOT NULL,
  values jsonb NOT NULL DEFAULT '{}'::jsonb,
  sender jsonb NOT NULL DEFAULT '{}'::jsonb,
  is_default boolean NOT NULL DEFAULT false,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE broadcasts (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type_key text NOT NULL,
  audience jsonb NOT NULL,
  topic_id uuid,
  brand_key text,
  channels text[],
  variables jsonb NOT NULL DEFAULT '{}'::jsonb,
  secret_variables_ciphertext text,
  secret_keys text[] NOT NULL DEFAULT '{}'::text[],
  status text NOT NULL DEFAULT 'queued'::text,
  send_at timestamp with time zone,
  fan_out_cursor text,
  fanned_out_at timestamp with time zone,
  targeted integer NOT NULL DEFAULT 0,
  events_created integer NOT NULL DEFAULT 0,
  final_counts jsonb,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  completed_at timestamp with time zone,
  failure_reason text
);

CREATE TABLE chat_destinations (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  contact_id uuid NOT NULL,
  provider text NOT NULL,
  label text,
  webhook_url_ciphertext text,
  webhook_url_hint text,
  channel text,
  chat_id text,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE chat_templates (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  notification_type_key text NOT NULL,
  brand_key text NOT NULL,
  language text NOT NULL,
  content text NOT NULL,
  blocks jsonb,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE chat_transports (
  tenant_id uuid NOT NULL,
  provider text NOT NULL,
  priority integer NOT NULL DEFAULT 0,
  enabled boolean NOT NULL DEFAULT true,
  settings jsonb NOT NULL DEFAULT '{}'::jsonb,
  secrets_ciphertext text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE contact_preferences (
  contact_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type_key text NOT NULL,
  channel text NOT NULL,
  enabled boolean NOT NULL,
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE contacts (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  external_id text NOT NULL,
  email text,
  phone text,
  name text,
  language text,
  properties jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  timezone text,
  quiet_hours jsonb
);

CREATE TABLE data_requests (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  kind text NOT NULL,
  status text NOT NULL DEFAULT 'queued'::text,
  file_path text,
  requested_by uuid,
  created_at timestamp with time zone NOT NULL,
  completed_at timestamp with time zone,
  error text
);

CREATE TABLE deliveries (
  id uuid NOT NULL,
  event_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  channel text NOT NULL,
  destination text NOT NULL DEFAULT ''::text,
  provider text,
  status text NOT NULL DEFAULT 'pending'::text,
  reason text,
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  provider_message_id text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  next_attempt_at timestamp with time zone,
  provider_attempts jsonb NOT NULL DEFAULT '[]'::jsonb
);

CREATE TABLE digests (
  opener_event_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  external_id text NOT NULL,
  type_key text NOT NULL,
  key text NOT NULL,
  window_end timestamp with time zone NOT NULL,
  max_events integer NOT NULL,
  count integer NOT NULL,
  events jsonb NOT NULL,
  closed_at timestamp with time zone
);

CREATE TABLE early_receipts (
  tenant_id uuid NOT NULL,
  channel text NOT NULL,
  provider_message_id text NOT NULL,
  status text NOT NULL,
  error text,
  received_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE email_feedback (
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL,
  delivery_id uuid,
  email text NOT NULL,
  kind text NOT NULL,
  detail text,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE email_suppressions (
  tenant_id uuid NOT NULL,
  email text NOT NULL,
  reason text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE email_templates (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  notification_type_key text NOT NULL,
  brand_key text NOT NULL,
  language text NOT NULL,
  subject text NOT NULL,
  content text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE email_tokens (
  id uuid NOT NULL,
  purpose text NOT NULL,
  token_hash bytea NOT NULL,
  user_id uuid NOT NULL,
  expires_at timestamp with time zone NOT NULL,
  consumed_at timestamp with time zone,
  created_at timestamp with time zone NOT NULL
);

CREATE TABLE email_transports (
  tenant_id uuid NOT NULL,
  host text NOT NULL,
  port integer NOT NULL,
  secure boolean NOT NULL DEFAULT false,
  username text,
  password_ciphertext text,
  from_email text NOT NULL,
  from_name text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  slot text NOT NULL DEFAULT 'primary'::text
);

CREATE TABLE events (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  type_key text NOT NULL,
  contact_id uuid,
  external_id text NOT NULL,
  brand_key text,
  channels text[],
  variables jsonb NOT NULL DEFAULT '{}'::jsonb,
  secret_variables_ciphertext text,
  secret_keys text[] NOT NULL DEFAULT '{}'::text[],
  status text NOT NULL DEFAULT 'queued'::text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  send_at timestamp with time zone,
  cancellation_key text,
  steps jsonb,
  digest_event_id uuid,
  broadcast_id uuid
) WITH (fillfactor=50);

CREATE TABLE herald_migrations (
  id integer NOT NULL DEFAULT nextval('herald_migrations_id_seq'::regclass),
  name character varying(255) NOT NULL,
  executed_at timestamp(6) with time zone NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
);

CREATE TABLE http_templates (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  notification_type_key text NOT NULL,
  brand_key text NOT NULL,
  language text NOT NULL,
  body jsonb NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE http_transports (
  tenant_id uuid NOT NULL,
  url text NOT NULL,
  headers_ciphertext text,
  secret_ciphertext text NOT NULL,
  include_secret_variables boolean NOT NULL DEFAULT false,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE idempotency_keys (
  tenant_id uuid NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  state text NOT NULL DEFAULT 'in_flight'::text,
  response_status integer,
  response_body jsonb,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  expires_at timestamp with time zone NOT NULL
);

CREATE TABLE inbox_items (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  contact_id uuid NOT NULL,
  event_id uuid,
  delivery_id uuid,
  type_key text NOT NULL,
  title text NOT NULL DEFAULT ''::text,
  body text NOT NULL DEFAULT ''::text,
  action_url text,
  data jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  seen_at timestamp with time zone,
  read_at timestamp with time zone,
  archived_at timestamp with time zone,
  stream_id bigint
);

CREATE TABLE inbox_templates (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  notification_type_key text NOT NULL,
  brand_key text NOT NULL,
  language text NOT NULL,
  title text NOT NULL DEFAULT ''::text,
  content text NOT NULL,
  action_url text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE install_secrets (
  name text NOT NULL,
  ciphertext text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE invitations (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  email text NOT NULL,
  role text NOT NULL,
  token_hash bytea NOT NULL,
  status text NOT NULL DEFAULT 'pending'::text,
  expires_at timestamp with time zone NOT NULL,
  invited_by uuid,
  created_at timestamp with time zone NOT NULL,
  accepted_at timestamp with time zone
);

CREATE TABLE memberships (
  user_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  role text NOT NULL,
  is_default boolean NOT NULL DEFAULT false,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE mfa_challenges (
  token_hash bytea NOT NULL,
  user_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  failed_attempts integer NOT NULL DEFAULT 0,
  expires_at timestamp with time zone NOT NULL
);

CREATE TABLE mfa_factors (
  id uuid NOT NULL,
  user_id uuid NOT NULL,
  kind text NOT NULL,
  secret_ciphertext text NOT NULL,
  confirmed_at timestamp with time zone,
  last_used_step bigint,
  created_at timestamp with time zone NOT NULL
);

CREATE TABLE mfa_recovery_codes (
  user_id uuid NOT NULL,
  code_hash bytea NOT NULL,
  used_at timestamp with time zone
);

CREATE TABLE notification_types (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  key text NOT NULL,
  name text NOT NULL DEFAULT ''::text,
  description text NOT NULL DEFAULT ''::text,
  channel_defaults jsonb NOT NULL DEFAULT '{"push": false, "email": true, "inbox": true, "web_push": false}'::jsonb,
  opt_out boolean NOT NULL DEFAULT true,
  variables jsonb NOT NULL DEFAULT '[]'::jsonb,
  deleted_at timestamp with time zone,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  workflow jsonb,
  bypass_quiet_hours boolean NOT NULL DEFAULT false
);

CREATE TABLE push_subscriptions (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  contact_id uuid NOT NULL,
  provider text NOT NULL,
  token text,
  endpoint text,
  keys jsonb,
  destination_hash text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  last_used_at timestamp with time zone
) WITH (fillfactor=70);

CREATE TABLE push_transports (
  tenant_id uuid NOT NULL,
  provider text NOT NULL,
  settings jsonb NOT NULL DEFAULT '{}'::jsonb,
  secrets_ciphertext text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE UNLOGGED TABLE rate_limit_buckets (
  key text NOT NULL,
  tokens double precision NOT NULL,
  updated_ms bigint NOT NULL
);

CREATE TABLE sender_domains (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  domain text NOT NULL,
  status text NOT NULL DEFAULT 'pending'::text,
  dkim_selector text NOT NULL,
  dkim_public_key text NOT NULL,
  dkim_private_key_ciphertext text NOT NULL,
  last_checked_at timestamp with time zone,
  last_error text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE sms_templates (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  notification_type_key text NOT NULL,
  brand_key text NOT NULL,
  language text NOT NULL,
  content text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE sms_transports (
  tenant_id uuid NOT NULL,
  provider text NOT NULL,
  priority integer NOT NULL DEFAULT 0,
  enabled boolean NOT NULL DEFAULT true,
  settings jsonb NOT NULL DEFAULT '{}'::jsonb,
  secrets_ciphertext text,
  callback_token_hash text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE sso_identities (
  provider_id uuid NOT NULL,
  subject text NOT NULL,
  user_id uuid NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE sso_providers (
  id uuid NOT NULL,
  slug text NOT NULL,
  kind text NOT NULL,
  display_name text NOT NULL,
  client_id text NOT NULL,
  client_secret_ciphertext text NOT NULL,
  issuer text,
  base_url text,
  api_url text,
  allowed_domains text[] NOT NULL DEFAULT '{}'::text[],
  tenant_id uuid,
  default_role text NOT NULL DEFAULT 'admin'::text,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE sso_states (
  state_hash bytea NOT NULL,
  provider_id uuid NOT NULL,
  code_verifier text NOT NULL,
  binding_hash bytea NOT NULL,
  expires_at timestamp with time zone NOT NULL,
  nonce_hash bytea NOT NULL
);

CREATE TABLE stream_events (
  id bigint NOT NULL DEFAULT nextval('stream_events_id_seq'::regclass),
  tenant_id uuid NOT NULL,
  contact_id uuid NOT NULL,
  kind text NOT NULL,
  payload jsonb NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE tenant_limits (
  tenant_id uuid NOT NULL,
  name text NOT NULL,
  value double precision NOT NULL
);

CREATE TABLE tenants (
  id uuid NOT NULL,
  name text NOT NULL,
  archived_at timestamp with time zone,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  default_language text NOT NULL DEFAULT 'en'::text,
  require_mfa boolean NOT NULL DEFAULT false,
  cors_origins text[] NOT NULL DEFAULT '{}'::text[]
);

CREATE TABLE throttle_hits (
  tenant_id uuid NOT NULL,
  external_id text NOT NULL,
  type_key text NOT NULL,
  key text NOT NULL,
  event_id uuid NOT NULL,
  at timestamp with time zone NOT NULL
);

CREATE TABLE topic_subscriptions (
  topic_id uuid NOT NULL,
  contact_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE topics (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  key text NOT NULL,
  name text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id uuid NOT NULL,
  email text NOT NULL,
  password_hash text NOT NULL,
  email_verified_at timestamp with time zone,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  seq bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  tenant_id uuid NOT NULL,
  endpoint_id uuid NOT NULL,
  event_type text NOT NULL,
  payload jsonb NOT NULL,
  status text NOT NULL DEFAULT 'pending'::text,
  attempts integer NOT NULL DEFAULT 0,
  last_status_code integer,
  last_error text,
  next_attempt_at timestamp with time zone NOT NULL DEFAULT now(),
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

CREATE TABLE webhook_endpoints (
  id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  url text NOT NULL,
  description text NOT NULL DEFAULT ''::text,
  event_types text[] NOT NULL,
  secret_ciphertext text NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text,
  failing_since timestamp with time zone,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now()
);

ALTER TABLE api_keys ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);

ALTER TABLE api_keys ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

ALTER TABLE api_keys ADD CONSTRAINT api_keys_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_kind_check CHECK ((actor_kind = ANY (ARRAY['user'::text, 'service_key'::text, 'cli'::text])));

ALTER TABLE audit_log ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id);

ALTER TABLE audit_log ADD CONSTRAINT audit_log_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE brands ADD CONSTRAINT brands_pkey PRIMARY KEY (id);

ALTER TABLE brands ADD CONSTRAINT brands_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE brands ADD CONSTRAINT brands_tenant_id_key_key UNIQUE (tenant_id, key);

ALTER TABLE broadcasts ADD CONSTRAINT broadcasts_pkey PRIMARY KEY (id);

ALTER TABLE broadcasts ADD CONSTRAINT broadcasts_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'completed'::text, 'canceled'::text, 'failed'::text])));

ALTER TABLE broadcasts ADD CONSTRAINT broadcasts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE broadcasts ADD CONSTRAINT broadcasts_topic_id_fkey FOREIGN KEY (topic_id) REFERENCES topics(id) ON DELETE SET NULL;

ALTER TABLE chat_destinations ADD CONSTRAINT chat_destinations_channel_check CHECK ((length(channel) <= 200));

ALTER TABLE chat_destinations ADD CONSTRAINT chat_destinations_chat_id_check CHECK ((length(chat_id) <= 200));

ALTER TABLE chat_destinations ADD CONSTRAINT chat_destinations_check CHECK (((webhook_url_ciphertext IS NOT NULL) OR (channel IS NOT NULL) OR (chat_id IS NOT NULL)));

ALTER TABLE chat_destinations ADD CONSTRAINT chat_destinations_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES contacts(id) ON DELETE CASCADE;

ALTER TABLE chat_destinations ADD CONSTRAINT chat_destinations_label_check CHECK ((length(label) <= 200));

ALTER TABLE chat_destinations ADD CONSTRAINT chat_destinations_pkey PRIMARY KEY (id);

ALTER TABLE chat_destinations ADD CONSTRAINT chat_destinations_provider_check CHECK ((provider = ANY (ARRAY['slack'::text, 'teams'::text, 'discord'::text, 'telegram'::text, 'mattermost'::text, 'google_chat'::text])));

ALTER TABLE chat_destinations ADD CONSTRAINT chat_destinations_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE chat_templates ADD CONSTRAINT chat_templates_blocks_check CHECK ((jsonb_typeof(blocks) = 'object'::text));

ALTER TABLE chat_templates ADD CONSTRAINT chat_templates_content_check CHECK ((content <> ''::text));

ALTER TABLE chat_templates ADD CONSTRAINT chat_templates_pkey PRIMARY KEY (id);

ALTER TABLE chat_templates ADD CONSTRAINT chat_templates_tenant_id_brand_key_fkey FOREIGN KEY (tenant_id, brand_key) REFERENCES brands(tenant_id, key) ON DELETE CASCADE;

ALTER TABLE chat_templates ADD CONSTRAINT chat_templates_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE chat_templates ADD CONSTRAINT chat_templates_tenant_id_notification_type_key_brand_key_la_key UNIQUE (tenant_id, notification_type_key, brand_key, language);

ALTER TABLE chat_transports ADD CONSTRAINT chat_transports_pkey PRIMARY KEY (tenant_id, provider);

ALTER TABLE chat_transports ADD CONSTRAINT chat_transports_priority_check CHECK (((priority >= 0) AND (priority <= 1000)));

ALTER TABLE chat_transports ADD CONSTRAINT chat_transports_provider_check CHECK ((provider = ANY (ARRAY['slack'::text, 'telegram'::text])));

ALTER TABLE chat_transports ADD CONSTRAINT chat_transports_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE contact_preferences ADD CONSTRAINT contact_preferences_channel_check CHECK ((channel = ANY (ARRAY['inbox'::text, 'email'::text, 'push'::text, 'web_push'::text, 'sms'::text, 'chat'::text, 'http'::text])));

ALTER TABLE contact_preferences ADD CONSTRAINT contact_preferences_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES contacts(id) ON DELETE CASCADE;

ALTER TABLE contact_preferences ADD CONSTRAINT contact_preferences_pkey PRIMARY KEY (contact_id, type_key, channel);

ALTER TABLE contact_preferences ADD CONSTRAINT contact_preferences_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE contacts ADD CONSTRAINT contacts_pkey PRIMARY KEY (id);

ALTER TABLE contacts ADD CONSTRAINT contacts_tenant_id_external_id_key UNIQUE (tenant_id, external_id);

ALTER TABLE contacts ADD CONSTRAINT contacts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE data_requests ADD CONSTRAINT data_requests_kind_check CHECK ((kind = ANY (ARRAY['export'::text, 'delete'::text])));

ALTER TABLE data_requests ADD CONSTRAINT data_requests_pkey PRIMARY KEY (id);

ALTER TABLE data_requests ADD CONSTRAINT data_requests_requested_by_fkey FOREIGN KEY (requested_by) REFERENCES users(id) ON DELETE SET NULL;

ALTER TABLE data_requests ADD CONSTRAINT data_requests_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'completed'::text, 'failed'::text])));

ALTER TABLE deliveries ADD CONSTRAINT deliveries_channel_check CHECK ((channel = ANY (ARRAY['inbox'::text, 'email'::text, 'push'::text, 'web_push'::text, 'sms'::text, 'chat'::text, 'http'::text])));

ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_id_channel_destination_key UNIQUE (event_id, channel, destination);

ALTER TABLE deliveries ADD CONSTRAINT deliveries_pkey PRIMARY KEY (id);

ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'sent'::text, 'delivered'::text, 'failed'::text, 'skipped'::text, 'bounced'::text, 'complained'::text])));

ALTER TABLE digests ADD CONSTRAINT digests_opener_event_id_fkey FOREIGN KEY (opener_event_id) REFERENCES events(id) ON DELETE CASCADE;

ALTER TABLE digests ADD CONSTRAINT digests_pkey PRIMARY KEY (opener_event_id);

ALTER TABLE digests ADD CONSTRAINT digests_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE early_receipts ADD CONSTRAINT early_receipts_pkey PRIMARY KEY (tenant_id, channel, provider_message_id);

ALTER TABLE early_receipts ADD CONSTRAINT early_receipts_status_check CHECK ((status = ANY (ARRAY['delivered'::text, 'failed'::text])));

ALTER TABLE early_receipts ADD CONSTRAINT early_receipts_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE email_feedback ADD CONSTRAINT email_feedback_kind_check CHECK ((kind = ANY (ARRAY['hard_bounce'::text, 'soft_bounce'::text, 'complaint'::text])));

ALTER TABLE email_feedback ADD CONSTRAINT email_feedback_pkey PRIMARY KEY (id);

ALTER TABLE email_feedback ADD CONSTRAINT email_feedback_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE email_suppressions ADD CONSTRAINT email_suppressions_pkey PRIMARY KEY (tenant_id, email);

ALTER TABLE email_suppressions ADD CONSTRAINT email_suppressions_reason_check CHECK ((reason = ANY (ARRAY['hard_bounce'::text, 'soft_bounces'::text, 'complaint'::text, 'manual'::text])));

ALTER TABLE email_suppressions ADD CONSTRAINT email_suppressions_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE email_templates ADD CONSTRAINT email_templates_content_check CHECK ((content <> ''::text));

ALTER TABLE email_templates ADD CONSTRAINT email_templates_pkey PRIMARY KEY (id);

ALTER TABLE email_templates ADD CONSTRAINT email_templates_tenant_id_brand_key_fkey FOREIGN KEY (tenant_id, brand_key) REFERENCES brands(tenant_id, key) ON DELETE CASCADE;

ALTER TABLE email_templates ADD CONSTRAINT email_templates_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE email_templates ADD CONSTRAINT email_templates_tenant_id_notification_type_key_brand_key_l_key UNIQUE (tenant_id, notification_type_key, brand_key, language);

ALTER TABLE email_tokens ADD CONSTRAINT email_tokens_pkey PRIMARY KEY (id);

ALTER TABLE email_tokens ADD CONSTRAINT email_tokens_purpose_check CHECK ((purpose = ANY (ARRAY['verify'::text, 'reset'::text])));

ALTER TABLE email_tokens ADD CONSTRAINT email_tokens_token_hash_key UNIQUE (token_hash);

ALTER TABLE email_tokens ADD CONSTRAINT email_tokens_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE email_transports ADD CONSTRAINT email_transports_pkey PRIMARY KEY (tenant_id, slot);

ALTER TABLE email_transports ADD CONSTRAINT email_transports_port_check CHECK (((port >= 1) AND (port <= 65535)));

ALTER TABLE email_transports ADD CONSTRAINT email_transports_slot_check CHECK ((slot = ANY (ARRAY['primary'::text, 'fallback'::text])));

ALTER TABLE email_transports ADD CONSTRAINT email_transports_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (id);

ALTER TABLE events ADD CONSTRAINT events_status_check CHECK ((status = ANY (ARRAY['scheduled'::text, 'queued'::text, 'processing'::text, 'delivered'::text, 'partially_delivered'::text, 'failed'::text, 'skipped'::text, 'canceled'::text, 'digested'::text])));

ALTER TABLE herald_migrations ADD CONSTRAINT herald_migrations_pkey PRIMARY KEY (id);

ALTER TABLE http_templates ADD CONSTRAINT http_templates_body_check CHECK ((jsonb_typeof(body) = ANY (ARRAY['object'::text, 'array'::text])));

ALTER TABLE http_templates ADD CONSTRAINT http_templates_pkey PRIMARY KEY (id);

ALTER TABLE http_templates ADD CONSTRAINT http_templates_tenant_id_brand_key_fkey FOREIGN KEY (tenant_id, brand_key) REFERENCES brands(tenant_id, key) ON DELETE CASCADE;

ALTER TABLE http_templates ADD CONSTRAINT http_templates_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE http_templates ADD CONSTRAINT http_templates_tenant_id_notification_type_key_brand_key_la_key UNIQUE (tenant_id, notification_type_key, brand_key, language);

ALTER TABLE http_transports ADD CONSTRAINT http_transports_pkey PRIMARY KEY (tenant_id);

ALTER TABLE http_transports ADD CONSTRAINT http_transports_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE http_transports ADD CONSTRAINT http_transports_url_check CHECK ((length(url) <= 2048));

ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (tenant_id, key);

ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_state_check CHECK ((state = ANY (ARRAY['in_flight'::text, 'done'::text])));

ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE inbox_items ADD CONSTRAINT inbox_items_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES contacts(id) ON DELETE CASCADE;

ALTER TABLE inbox_items ADD CONSTRAINT inbox_items_delivery_id_key UNIQUE (delivery_id);

ALTER TABLE inbox_items ADD CONSTRAINT inbox_items_pkey PRIMARY KEY (id);

ALTER TABLE inbox_templates ADD CONSTRAINT inbox_templates_content_check CHECK ((content <> ''::text));

ALTER TABLE inbox_templates ADD CONSTRAINT inbox_templates_pkey PRIMARY KEY (id);

ALTER TABLE inbox_templates ADD CONSTRAINT inbox_templates_tenant_id_brand_key_fkey FOREIGN KEY (tenant_id, brand_key) REFERENCES brands(tenant_id, key) ON DELETE CASCADE;

ALTER TABLE inbox_templates ADD CONSTRAINT inbox_templates_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE inbox_templates ADD CONSTRAINT inbox_templates_tenant_id_notification_type_key_brand_key_l_key UNIQUE (tenant_id, notification_type_key, brand_key, language);

ALTER TABLE install_secrets ADD CONSTRAINT install_secrets_pkey PRIMARY KEY (name);

ALTER TABLE invitations ADD CONSTRAINT invitations_invited_by_fkey FOREIGN KEY (invited_by) REFERENCES users(id) ON DELETE SET NULL;

ALTER TABLE invitations ADD CONSTRAINT invitations_pkey PRIMARY KEY (id);

ALTER TABLE invitations ADD CONSTRAINT invitations_role_check CHECK ((role = 'admin'::text));

ALTER TABLE invitations ADD CONSTRAINT invitations_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'accepted'::text, 'revoked'::text])));

ALTER TABLE invitations ADD CONSTRAINT invitations_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE invitations ADD CONSTRAINT invitations_token_hash_key UNIQUE (token_hash);

ALTER TABLE memberships ADD CONSTRAINT memberships_pkey PRIMARY KEY (user_id, tenant_id);

ALTER TABLE memberships ADD CONSTRAINT memberships_role_check CHECK ((role = ANY (ARRAY['owner'::text, 'admin'::text])));

ALTER TABLE memberships ADD CONSTRAINT memberships_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE memberships ADD CONSTRAINT memberships_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE mfa_challenges ADD CONSTRAINT mfa_challenges_pkey PRIMARY KEY (token_hash);

ALTER TABLE mfa_challenges ADD CONSTRAINT mfa_challenges_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE mfa_challenges ADD CONSTRAINT mfa_challenges_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE mfa_factors ADD CONSTRAINT mfa_factors_kind_check CHECK ((kind = 'totp'::text));

ALTER TABLE mfa_factors ADD CONSTRAINT mfa_factors_pkey PRIMARY KEY (id);

ALTER TABLE mfa_factors ADD CONSTRAINT mfa_factors_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE mfa_factors ADD CONSTRAINT mfa_factors_user_id_kind_key UNIQUE (user_id, kind);

ALTER TABLE mfa_recovery_codes ADD CONSTRAINT mfa_recovery_codes_pkey PRIMARY KEY (user_id, code_hash);

ALTER TABLE mfa_recovery_codes ADD CONSTRAINT mfa_recovery_codes_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE notification_types ADD CONSTRAINT notification_types_pkey PRIMARY KEY (id);

ALTER TABLE notification_types ADD CONSTRAINT notification_types_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE push_subscriptions ADD CONSTRAINT push_subscriptions_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES contacts(id) ON DELETE CASCADE;

ALTER TABLE push_subscriptions ADD CONSTRAINT push_subscriptions_pkey PRIMARY KEY (id);

ALTER TABLE push_subscriptions ADD CONSTRAINT push_subscriptions_provider_check CHECK ((provider = ANY (ARRAY['apns'::text, 'fcm'::text, 'expo'::text, 'webpush'::text])));

ALTER TABLE push_subscriptions ADD CONSTRAINT push_subscriptions_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE push_subscriptions ADD CONSTRAINT push_subscriptions_tenant_id_provider_destination_hash_key UNIQUE (tenant_id, provider, destination_hash);

ALTER TABLE push_transports ADD CONSTRAINT push_transports_pkey PRIMARY KEY (tenant_id, provider);

ALTER TABLE push_transports ADD CONSTRAINT push_transports_provider_check CHECK ((provider = ANY (ARRAY['apns'::text, 'fcm'::text, 'expo'::text, 'webpush'::text])));

ALTER TABLE push_transports ADD CONSTRAINT push_transports_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE rate_limit_buckets ADD CONSTRAINT rate_limit_buckets_pkey PRIMARY KEY (key);

ALTER TABLE sender_domains ADD CONSTRAINT sender_domains_pkey PRIMARY KEY (id);

ALTER TABLE sender_domains ADD CONSTRAINT sender_domains_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'verified'::text, 'failed'::text])));

ALTER TABLE sender_domains ADD CONSTRAINT sender_domains_tenant_id_domain_key UNIQUE (tenant_id, domain);

ALTER TABLE sender_domains ADD CONSTRAINT sender_domains_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE sms_templates ADD CONSTRAINT sms_templates_content_check CHECK ((content <> ''::text));

ALTER TABLE sms_templates ADD CONSTRAINT sms_templates_pkey PRIMARY KEY (id);

ALTER TABLE sms_templates ADD CONSTRAINT sms_templates_tenant_id_brand_key_fkey FOREIGN KEY (tenant_id, brand_key) REFERENCES brands(tenant_id, key) ON DELETE CASCADE;

ALTER TABLE sms_templates ADD CONSTRAINT sms_templates_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE sms_templates ADD CONSTRAINT sms_templates_tenant_id_notification_type_key_brand_key_lan_key UNIQUE (tenant_id, notification_type_key, brand_key, language);

ALTER TABLE sms_transports ADD CONSTRAINT sms_transports_callback_token_hash_key UNIQUE (callback_token_hash);

ALTER TABLE sms_transports ADD CONSTRAINT sms_transports_pkey PRIMARY KEY (tenant_id, provider);

ALTER TABLE sms_transports ADD CONSTRAINT sms_transports_priority_check CHECK (((priority >= 0) AND (priority <= 1000)));

ALTER TABLE sms_transports ADD CONSTRAINT sms_transports_provider_check CHECK ((provider = ANY (ARRAY['twilio'::text, 'vonage'::text, 'http'::text])));

ALTER TABLE sms_transports ADD CONSTRAINT sms_transports_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE sso_identities ADD CONSTRAINT sso_identities_pkey PRIMARY KEY (provider_id, subject);

ALTER TABLE sso_identities ADD CONSTRAINT sso_identities_provider_id_fkey FOREIGN KEY (provider_id) REFERENCES sso_providers(id) ON DELETE CASCADE;

ALTER TABLE sso_identities ADD CONSTRAINT sso_identities_subject_check CHECK (((length(subject) >= 1) AND (length(subject) <= 255)));

ALTER TABLE sso_identities ADD CONSTRAINT sso_identities_user_id_fkey FOREIGN KEY (user_id) REFERENCES users(id) ON DELETE CASCADE;

ALTER TABLE sso_identities ADD CONSTRAINT sso_identities_user_id_provider_id_key UNIQUE (user_id, provider_id);

ALTER TABLE sso_providers ADD CONSTRAINT sso_providers_default_role_check CHECK ((default_role = ANY (ARRAY['admin'::text, 'owner'::text])));

ALTER TABLE sso_providers ADD CONSTRAINT sso_providers_pkey PRIMARY KEY (id);

ALTER TABLE sso_providers ADD CONSTRAINT sso_providers_slug_check CHECK ((slug ~ '^[a-z0-9][a-z0-9_-]{0,63}$'::text));

ALTER TABLE sso_providers ADD CONSTRAINT sso_providers_slug_key UNIQUE (slug);

ALTER TABLE sso_providers ADD CONSTRAINT sso_providers_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE SET NULL;

ALTER TABLE sso_states ADD CONSTRAINT sso_states_pkey PRIMARY KEY (state_hash);

ALTER TABLE sso_states ADD CONSTRAINT sso_states_provider_id_fkey FOREIGN KEY (provider_id) REFERENCES sso_providers(id) ON DELETE CASCADE;

ALTER TABLE stream_events ADD CONSTRAINT stream_events_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES contacts(id) ON DELETE CASCADE;

ALTER TABLE stream_events ADD CONSTRAINT stream_events_kind_check CHECK ((kind = ANY (ARRAY['notification'::text, 'updated'::text, 'counts'::text])));

ALTER TABLE stream_events ADD CONSTRAINT stream_events_pkey PRIMARY KEY (contact_id, id);

ALTER TABLE tenant_limits ADD CONSTRAINT tenant_limits_pkey PRIMARY KEY (tenant_id, name);

ALTER TABLE tenant_limits ADD CONSTRAINT tenant_limits_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE tenant_limits ADD CONSTRAINT tenant_limits_value_check CHECK ((value >= (0)::double precision));

ALTER TABLE tenants ADD CONSTRAINT tenants_cors_origins_check CHECK ((cardinality(cors_origins) <= 50));

ALTER TABLE tenants ADD CONSTRAINT tenants_name_check CHECK (((length(name) >= 1) AND (length(name) <= 100)));

ALTER TABLE tenants ADD CONSTRAINT tenants_pkey PRIMARY KEY (id);

ALTER TABLE throttle_hits ADD CONSTRAINT throttle_hits_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE topic_subscriptions ADD CONSTRAINT topic_subscriptions_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES contacts(id) ON DELETE CASCADE;

ALTER TABLE topic_subscriptions ADD CONSTRAINT topic_subscriptions_pkey PRIMARY KEY (topic_id, contact_id);

ALTER TABLE topic_subscriptions ADD CONSTRAINT topic_subscriptions_topic_id_fkey FOREIGN KEY (topic_id) REFERENCES topics(id) ON DELETE CASCADE;

ALTER TABLE topics ADD CONSTRAINT topics_pkey PRIMARY KEY (id);

ALTER TABLE topics ADD CONSTRAINT topics_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

ALTER TABLE topics ADD CONSTRAINT topics_tenant_id_key_key UNIQUE (tenant_id, key);

ALTER TABLE users ADD CONSTRAINT users_pkey PRIMARY KEY (id);

ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints(id) ON DELETE CASCADE;

ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id);

ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'succeeded'::text, 'failed'::text])));

ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_pkey PRIMARY KEY (id);

ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;

CREATE INDEX api_keys_tenant ON public.api_keys USING btree (tenant_id);

CREATE INDEX audit_log_tenant_id ON public.audit_log USING btree (tenant_id, id DESC);

CREATE UNIQUE INDEX brands_one_default ON public.brands USING btree (tenant_id) WHERE is_default;

CREATE INDEX broadcasts_tenant ON public.broadcasts USING btree (tenant_id, id DESC);

CREATE INDEX chat_destinations_contact ON public.chat_destinations USING btree (contact_id, created_at);

CREATE INDEX data_requests_tenant ON public.data_requests USING btree (tenant_id, created_at DESC);

CREATE INDEX deliveries_sms_provider_message ON public.deliveries USING btree (tenant_id, provider_message_id) WHERE ((channel = 'sms'::text) AND (provider_message_id IS NOT NULL));

CREATE UNIQUE INDEX digests_open ON public.digests USING btree (tenant_id, external_id, type_key, key) WHERE (closed_at IS NULL);

CREATE INDEX early_receipts_received_at ON public.early_receipts USING btree (received_at);

CREATE INDEX email_feedback_address ON public.email_feedback USING btree (tenant_id, email, created_at);

CREATE INDEX email_tokens_user ON public.email_tokens USING btree (user_id, purpose, created_at DESC);

CREATE UNIQUE INDEX events_broadcast_contact ON public.events USING btree (broadcast_id, contact_id) WHERE (broadcast_id IS NOT NULL);

CREATE INDEX events_cancellation_key ON public.events USING btree (tenant_id, cancellation_key) WHERE (cancellation_key IS NOT NULL);

CREATE INDEX events_tenant_external ON public.events USING btree (tenant_id, external_id, id DESC);

CREATE INDEX events_tenant_id ON public.events USING btree (tenant_id, id DESC);

CREATE INDEX events_tenant_type ON public.events USING btree (tenant_id, type_key, id DESC);

CREATE INDEX idempotency_keys_expiry ON public.idempotency_keys USING btree (expires_at);

CREATE INDEX inbox_items_contact ON public.inbox_items USING btree (contact_id, id DESC);

CREATE INDEX inbox_items_event ON public.inbox_items USING btree (event_id) WHERE (event_id IS NOT NULL);

CREATE INDEX inbox_items_stream ON public.inbox_items USING btree (contact_id, stream_id) WHERE (stream_id IS NOT NULL);

CREATE INDEX inbox_items_unread ON public.inbox_items USING btree (contact_id) WHERE ((read_at IS NULL) AND (archived_at IS NULL));

CREATE INDEX invitations_tenant_pending ON public.invitations USING btree (tenant_id, lower(email)) WHERE (status = 'pending'::text);

CREATE UNIQUE INDEX memberships_one_default ON public.memberships USING btree (user_id) WHERE is_default;

CREATE INDEX memberships_tenant ON public.memberships USING btree (tenant_id);

CREATE INDEX mfa_challenges_user ON public.mfa_challenges USING btree (user_id);

CREATE UNIQUE INDEX notification_types_live_key ON public.notification_types USING btree (tenant_id, key) WHERE (deleted_at IS NULL);

CREATE INDEX notification_types_tenant ON public.notification_types USING btree (tenant_id, key);

CREATE INDEX push_subscriptions_contact ON public.push_subscriptions USING btree (contact_id);

CREATE INDEX stream_events_created ON public.stream_events USING btree (created_at);

CREATE INDEX throttle_hits_scope ON public.throttle_hits USING btree (tenant_id, external_id, type_key, key, at);

CREATE INDEX topic_subscriptions_contact ON public.topic_subscriptions USING btree (contact_id);

CREATE UNIQUE INDEX users_email_key ON public.users USING btree (lower(email));

CREATE INDEX webhook_deliveries_due ON public.webhook_deliveries USING btree (next_attempt_at) WHERE (status = 'pending'::text);

CREATE INDEX webhook_deliveries_endpoint ON public.webhook_deliveries USING btree (endpoint_id, seq DESC);

CREATE INDEX webhook_endpoints_tenant ON public.webhook_endpoints USING btree (tenant_id, created_at, id);

CREATE SEQUENCE herald_migrations_id_seq AS integer OWNED BY herald_migrations.id;

CREATE SEQUENCE stream_events_id_seq AS bigint OWNED BY stream_events.id;

CREATE SEQUENCE webhook_deliveries_seq_seq AS bigint OWNED BY webhook_deliveries.seq;

CREATE OR REPLACE FUNCTION public.herald_api_key_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        PERFORM pg_notify('herald_api_keys', OLD.id::text);
        RETURN NULL;
      END $function$;

CREATE OR REPLACE FUNCTION public.herald_assert(ok boolean, message text)
 RETURNS boolean
 LANGUAGE plpgsql
AS $function$
      BEGIN
        IF ok IS NOT TRUE THEN
          RAISE EXCEPTION USING MESSAGE = message, ERRCODE = 'P0004'; -- assert_failure
        END IF;
        RETURN true;
      END $function$;

CREATE OR REPLACE FUNCTION public.herald_contacts_deleted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        UPDATE events e SET contact_id = NULL FROM deleted_contacts c WHERE e.contact_id = c.id;
        RETURN NULL;
      END $function$;

CREATE OR REPLACE FUNCTION public.herald_events_deleted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        DELETE FROM deliveries d USING deleted_events e WHERE d.event_id = e.id;
        UPDATE inbox_items i SET event_id = NULL, delivery_id = NULL FROM deleted_events e WHERE i.event_id = e.id;
        RETURN NULL;
      END $function$;

CREATE OR REPLACE FUNCTION public.herald_tenants_deleted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        DELETE FROM events e USING deleted_tenants t WHERE e.tenant_id = t.id;
        RETURN NULL;
      END $function$;

CREATE OR REPLACE FUNCTION public.herald_webhook_delivery_body(type text, delivery_id uuid, event_id uuid, channel text, status text, reason text, provider text, error text)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
        SELECT jsonb_build_object('type', type, 'timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', jsonb_build_object(
          'delivery_id', delivery_id, 'event_id', event_id, 'channel', channel, 'status', status,
          'reason', reason, 'provider', provider, 'error', error))
      $function$;

CREATE OR REPLACE FUNCTION public.herald_webhook_delivery_type(status text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE
AS $function$
        SELECT CASE status WHEN 'sent' THEN 'delivery.sent' WHEN 'delivered' THEN 'delivery.sent'
                           WHEN 'failed' THEN 'delivery.failed' WHEN 'skipped' THEN 'delivery.skipped' END
      $function$;

CREATE OR REPLACE FUNCTION public.herald_webhooks_deliveries()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
      END $function$;

CREATE OR REPLACE FUNCTION public.herald_webhooks_events()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled AND 'event.completed' = ANY (event_types)) THEN
          RETURN NULL;
        END IF;
        INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_type, payload)
        SELECT n.tenant_id, w.id, 'event.completed',
               jsonb_build_object('type', 'event.completed', 'timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', jsonb_build_object(
                 'event_id', n.id, 'type', n.type_key, 'external_id', n.external_id, 'contact_id', n.contact_id, 'status', n.status))
          FROM new_rows n
          JOIN old_rows o ON o.id = n.id
          JOIN webhook_endpoints w ON w.tenant_id = n.tenant_id AND w.enabled AND 'event.completed' = ANY (w.event_types)
         WHERE n.status IN ('delivered', 'partially_delivered', 'failed', 'skipped', 'canceled', 'digested') AND o.status NOT IN ('delivered', 'partially_delivered', 'failed', 'skipped', 'canceled', 'digested');
        RETURN NULL;
      END $function$;

CREATE TRIGGER api_keys_changed AFTER DELETE OR UPDATE OF revoked_at, key_hash, tenant_id ON public.api_keys FOR EACH ROW EXECUTE FUNCTION herald_api_key_changed();

CREATE TRIGGER contacts_deleted AFTER DELETE ON public.contacts REFERENCING OLD TABLE AS deleted_contacts FOR EACH STATEMENT EXECUTE FUNCTION herald_contacts_deleted();

CREATE TRIGGER deliveries_webhooks_insert AFTER INSERT ON public.deliveries REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_webhooks_deliveries();

CREATE TRIGGER deliveries_webhooks_update AFTER UPDATE ON public.deliveries REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_webhooks_deliveries();

CREATE TRIGGER events_deleted AFTER DELETE ON public.events REFERENCING OLD TABLE AS deleted_events FOR EACH STATEMENT EXECUTE FUNCTION herald_events_deleted();

CREATE TRIGGER events_webhooks_update AFTER UPDATE ON public.events REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_webhooks_events();

CREATE TRIGGER tenants_deleted AFTER DELETE ON public.tenants REFERENCING OLD TABLE AS deleted_tenants FOR EACH STATEMENT EXECUTE FUNCTION herald_tenants_deleted();

// The console's tables: the audit log of management writes, the SSO providers console users may sign
// in with (client secrets sealed with the key ring) and the short-lived state of SSO sign-ins under way.
import { Migration } from '@mikro-orm/migrations';

export class Console extends Migration {
  override name = '0016-console';

  up(): void {
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
}

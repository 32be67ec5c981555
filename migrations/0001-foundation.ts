// Foundation schema: tenants and what every other part hangs off (users, memberships, brands, service
// keys), plus the shared machinery tables (rate-limit buckets, install secrets, per-tenant limits).
import { Migration } from '@mikro-orm/migrations';

export class Foundation extends Migration {
  override name = '0001-foundation';

  up(): void {
    this.addSql(`
      CREATE TABLE tenants (
        id uuid PRIMARY KEY,
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
        archived_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
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

  override down(): void {
    this.addSql(`DROP TABLE IF EXISTS install_secrets, rate_limit_buckets, api_keys, brands, memberships, users, tenant_limits, tenants CASCADE`);
  }
}

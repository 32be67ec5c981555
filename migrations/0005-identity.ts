// Identity: emailed link tokens (verification, password reset), invitations and data requests.
// Link tokens are stored only as SHA-256 of 32 random bytes: the plaintext exists in the email alone.
import { Migration } from '@mikro-orm/migrations';

export class Identity extends Migration {
  override name = '0005-identity';

  up(): void {
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
    this.addSql(`CREATE INDEX invitations_tenant_pending ON invitations (tenant_id, lower(email)) WHERE status = 'pending'`);
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

  override down(): void {
    this.addSql(`DROP TABLE IF EXISTS data_requests, invitations, email_tokens CASCADE`);
  }
}

// Second factors of console users (server/resources/mfa.ts): their TOTP factors, recovery codes and
// the pending second steps of sign-ins, and the switch by which a tenant requires a factor of members.
import { Migration } from '@mikro-orm/migrations';

export class Mfa extends Migration {
  override name = '0003-mfa';

  up(): void {
    this.addSql(`ALTER TABLE tenants ADD COLUMN require_mfa boolean NOT NULL DEFAULT false`);
    // One factor per user and kind; a factor counts from confirmed_at (before that it is an enrolment in
    // progress). last_used_step is the TOTP time step of the last code accepted: no code of that step or
    // an earlier one is accepted again.
    this.addSql(`
      CREATE TABLE mfa_factors (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind = 'totp'),
        secret_ciphertext text NOT NULL,
        confirmed_at timestamptz,
        last_used_step bigint,
        created_at timestamptz NOT NULL,
        UNIQUE (user_id, kind)
      )`);
    this.addSql(`
      CREATE TABLE mfa_recovery_codes (
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        code_hash bytea NOT NULL,
        used_at timestamptz,
        PRIMARY KEY (user_id, code_hash)
      )`);
    this.addSql(`
      CREATE TABLE mfa_challenges (
        token_hash bytea PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        failed_attempts integer NOT NULL DEFAULT 0,
        expires_at timestamptz NOT NULL
      )`);
    this.addSql(`CREATE INDEX mfa_challenges_user ON mfa_challenges (user_id)`);
  }
}

// SSO identities: which account a provider's subject signs in to (server/resources/sso.ts). A sign-in
// matches the (provider, subject) pair first, so an address that changes hands at the provider does not
// carry the sign-in to another account; an account has at most one subject per provider.
// Sign-ins also keep the hash of the OpenID Connect nonce they sent. Pending sign-ins (ten minutes at
// most) are dropped rather than given a nonce they never sent: their person starts again.
import { Migration } from '@mikro-orm/migrations';

export class SsoIdentities extends Migration {
  override name = '0004-sso-identities';

  up(): void {
    this.addSql(`
      CREATE TABLE sso_identities (
        provider_id uuid NOT NULL REFERENCES sso_providers (id) ON DELETE CASCADE,
        subject text NOT NULL CHECK (length(subject) BETWEEN 1 AND 255),
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (provider_id, subject),
        UNIQUE (user_id, provider_id)
      )`);
    this.addSql(`DELETE FROM sso_states`);
    this.addSql(`ALTER TABLE sso_states ADD COLUMN nonce_hash bytea NOT NULL`);
  }
}

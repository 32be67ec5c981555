// Service-key change notices: HTTP processes keep verified service keys in memory for a minute
// (server/base/auth/service-key-cache.ts), so a revocation or a deletion, from whichever process or
// command, must reach them at once. The trigger announces every such change on a channel they
// LISTEN on; the payload is the key's id, never anything secret.
import { Migration } from '@mikro-orm/migrations';

export class ApiKeyNotices extends Migration {
  override name = '0006-api-key-notices';

  up(): void {
    this.addSql(`
      CREATE FUNCTION herald_api_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('herald_api_keys', OLD.id::text);
        RETURN NULL;
      END $$`);
    this.addSql(`
      CREATE TRIGGER api_keys_changed AFTER UPDATE OF revoked_at, key_hash, tenant_id OR DELETE ON api_keys
        FOR EACH ROW EXECUTE FUNCTION herald_api_key_changed()`);
  }
}

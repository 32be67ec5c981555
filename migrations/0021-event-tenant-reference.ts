// Events without a per-row check against their tenant: the check locked the tenant's one row again for
// every event written. Every event is written by a statement that locks its tenant's row first (FOR
// KEY SHARE, once per tenant): the trigger statement its triggers' tenants, the broadcast fan-out its
// broadcast's tenant. So a tenant's deletion waits for the events being written to commit, at the
// tenant's row, before its cascades take any contact or broadcast row such a statement would wait
// for in turn (the two could deadlock). What the key did on the deletion (its events deleted) is done
// by one trigger per deleting statement, which fires after the deletion's cascades and before the
// triggers those fire, so the deletion of the tenant's contacts finds no event of theirs to clear.
import { Migration } from '@mikro-orm/migrations';

export class EventTenantReference extends Migration {
  override name = '0021-event-tenant-reference';

  up(): void {
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
    this.addSql(`ALTER TABLE events DROP CONSTRAINT events_tenant_id_fkey`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE events ADD CONSTRAINT events_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants (id) ON DELETE CASCADE`);
    this.addSql(`DROP TRIGGER tenants_deleted ON tenants`);
    this.addSql(`DROP FUNCTION herald_tenants_deleted()`);
  }
}

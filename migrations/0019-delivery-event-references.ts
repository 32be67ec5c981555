// Deliveries and inbox items without a per-row check against their event. Every row of either is
// written by the delivery pipeline for an event it holds: locked by the run, or updated by the same
// statement, whose assertion undoes it when the event is gone (server/delivery/stages/store.ts). So
// the foreign keys' check of each inserted row (a query, an index probe and a lock on the event's row,
// on the hottest path of the database) guarded nothing. What the keys did when an event is deleted
// (its deliveries deleted, its inbox items kept without it) is done by one trigger per deleting
// statement instead of one query per event; events go only with their tenant, whose deletion reaches
// them through its own foreign key.
import { Migration } from '@mikro-orm/migrations';

export class DeliveryEventReferences extends Migration {
  override name = '0019-delivery-event-references';

  up(): void {
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
    this.addSql(`ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_id_fkey`);
    this.addSql(`ALTER TABLE inbox_items DROP CONSTRAINT inbox_items_event_id_fkey`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE deliveries ADD CONSTRAINT deliveries_event_id_fkey FOREIGN KEY (event_id) REFERENCES events (id) ON DELETE CASCADE`);
    this.addSql(`ALTER TABLE inbox_items ADD CONSTRAINT inbox_items_event_id_fkey FOREIGN KEY (event_id) REFERENCES events (id) ON DELETE SET NULL`);
    this.addSql(`DROP TRIGGER events_deleted ON events`);
    this.addSql(`DROP FUNCTION herald_events_deleted()`);
  }
}

// Retention (jobs/retention-prune.ts) finds old events and inbox items by id (UUIDv7, ordered by
// creation) through their primary keys. Deleting an event deletes its deliveries
// (herald_events_deleted); its inbox items lose both references to them, found through this index on
// their event_id rather than by a scan of every inbox item.
import { Migration } from '@mikro-orm/migrations';

export class Retention extends Migration {
  override name = '0013-retention';

  up(): void {
    this.addSql(`CREATE INDEX inbox_items_event ON inbox_items (event_id) WHERE event_id IS NOT NULL`);
    this.addSql(`CREATE OR REPLACE FUNCTION herald_events_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM deliveries d USING deleted_events e WHERE d.event_id = e.id;
        UPDATE inbox_items i SET event_id = NULL, delivery_id = NULL FROM deleted_events e WHERE i.event_id = e.id;
        RETURN NULL;
      END $$`);
  }
}

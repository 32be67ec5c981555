// Events without a per-row check against their contact. Every event is written by a statement that
// holds its contact: the trigger statement locks each recipient's row (or inserts or updates it) and
// the broadcast fan-out locks its page's contacts, skipping any deleted meanwhile; so a contact's
// deletion waits for the events naming it to commit, as the key's check made it wait. What the key
// did on a contact's deletion (its events kept, without it) is done by one trigger per deleting
// statement instead of one query per contact: events have no index on their contact, so each of
// those queries read the whole table (a tenant's deletion ran one per contact).
import { Migration } from '@mikro-orm/migrations';

export class EventContactReference extends Migration {
  override name = '0020-event-contact-reference';

  up(): void {
    this.addSql(`
      CREATE FUNCTION herald_contacts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE events e SET contact_id = NULL FROM deleted_contacts c WHERE e.contact_id = c.id;
        RETURN NULL;
      END $$`);
    this.addSql(`
      CREATE TRIGGER contacts_deleted AFTER DELETE ON contacts
        REFERENCING OLD TABLE AS deleted_contacts
        FOR EACH STATEMENT EXECUTE FUNCTION herald_contacts_deleted()`);
    this.addSql(`ALTER TABLE events DROP CONSTRAINT events_contact_id_fkey`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE events ADD CONSTRAINT events_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES contacts (id) ON DELETE SET NULL`);
    this.addSql(`DROP TRIGGER contacts_deleted ON contacts`);
    this.addSql(`DROP FUNCTION herald_contacts_deleted()`);
  }
}

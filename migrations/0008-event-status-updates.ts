// Event status changes as heap-only (HOT) updates. Every delivered event has its status updated at
// least once; while status was indexed, each such update wrote a new entry into all five indexes of
// events. Without that index, and with room left on each page (fillfactor 90), the update stays on
// the row's page and touches no index. The activity log's status filter now walks the tenant's
// events newest first (events_tenant_id) and filters: fine for the page sizes the log serves, slower
// only when asking for a status that is rare among many events.
import { Migration } from '@mikro-orm/migrations';

export class EventStatusUpdates extends Migration {
  override name = '0008-event-status-updates';

  up(): void {
    this.addSql(`DROP INDEX events_tenant_status`);
    this.addSql(`ALTER TABLE events SET (fillfactor = 90)`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE events RESET (fillfactor)`);
    this.addSql(`CREATE INDEX events_tenant_status ON events (tenant_id, status, id DESC)`);
  }
}

// An inbox item is its own 'notification' on the contact's stream: it carries a stream id, drawn from
// the stream log's sequence under the contact's stream lock, instead of a stream_events row holding a
// copy of it. That copy (a JSON payload as large as the item, its heap row and two index entries) was
// a quarter of the WAL a delivered item wrote. Items stored before this migration keep their NULL
// stream id and are replayed from their stream_events copies until those are pruned.
import { Migration } from '@mikro-orm/migrations';

export class InboxStreamIds extends Migration {
  override name = '0012-inbox-stream-ids';

  up(): void {
    this.addSql(`ALTER TABLE inbox_items ADD COLUMN stream_id bigint`);
    this.addSql(`CREATE INDEX inbox_items_stream ON inbox_items (contact_id, stream_id) WHERE stream_id IS NOT NULL`);
  }

  override down(): void {
    this.addSql(`DROP INDEX inbox_items_stream`);
    this.addSql(`ALTER TABLE inbox_items DROP COLUMN stream_id`);
  }
}

// A broadcast whose fan-out gives up (its job out of retries) ends 'failed', with the reason kept on
// the row; the events it wrote before that are delivered as any others.
import { Migration } from '@mikro-orm/migrations';

export class BroadcastFailures extends Migration {
  override name = '0017-broadcast-failures';

  up(): void {
    this.addSql(`ALTER TABLE broadcasts DROP CONSTRAINT broadcasts_status_check`);
    this.addSql(`ALTER TABLE broadcasts ADD CONSTRAINT broadcasts_status_check CHECK (status IN ('queued', 'running', 'completed', 'canceled', 'failed'))`);
    this.addSql(`ALTER TABLE broadcasts ADD COLUMN failure_reason text`);
  }
}

// A delivery waiting for a retry shows when it runs (server/delivery/retry.ts sets it).
import { Migration } from '@mikro-orm/migrations';

export class DeliveryNextAttempt extends Migration {
  override name = '0002-delivery-next-attempt';

  up(): void {
    this.addSql(`ALTER TABLE deliveries ADD COLUMN next_attempt_at timestamptz`);
  }
}

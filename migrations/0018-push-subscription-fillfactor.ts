// A push subscription's row is rewritten (last_used_at) by a sent push, at most once a minute. Space
// left free in its page lets that update stay on the page without a new entry in each of the table's
// indexes (a HOT update); packed pages make every touch write the row's index entries anew.
import { Migration } from '@mikro-orm/migrations';

export class PushSubscriptionFillfactor extends Migration {
  override name = '0018-push-subscription-fillfactor';

  up(): void {
    this.addSql(`ALTER TABLE push_subscriptions SET (fillfactor = 70)`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE push_subscriptions RESET (fillfactor)`);
  }
}

// herald_assert(ok, message): raises `message` unless `ok`. A statement that must be all or nothing
// without a transaction around it (the delivery batch's store statement, server/delivery/
// batch-store.ts) checks its own outcome with it in its final SELECT: the error undoes the whole
// statement, where a check in the caller would come after the commit.
import { Migration } from '@mikro-orm/migrations';

export class StatementAssertions extends Migration {
  override name = '0011-statement-assertions';

  up(): void {
    this.addSql(`
      CREATE FUNCTION herald_assert(ok boolean, message text) RETURNS boolean LANGUAGE plpgsql AS $$
      BEGIN
        IF ok IS NOT TRUE THEN
          RAISE EXCEPTION USING MESSAGE = message, ERRCODE = 'P0004'; -- assert_failure
        END IF;
        RETURN true;
      END $$`);
  }

  override down(): void {
    this.addSql(`DROP FUNCTION herald_assert(boolean, text)`);
  }
}

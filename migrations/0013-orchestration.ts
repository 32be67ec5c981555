// Orchestration: a notification type's workflow and quiet-hours bypass; a contact's time zone and
// quiet hours; an event's schedule (send_at), cancellation key, workflow progress (steps, with each
// step's definition as it was when the event started) and, for an event digested into another, the
// opener; the open digest windows; and the throttle's record of recent passes. The status column gains
// the statuses of held and ended-early events. No index on events changes with a status update, so
// those updates stay heap-only.
import { Migration } from '@mikro-orm/migrations';

export class Orchestration extends Migration {
  override name = '0013-orchestration';

  up(): void {
    this.addSql(`ALTER TABLE notification_types ADD COLUMN workflow jsonb, ADD COLUMN bypass_quiet_hours boolean NOT NULL DEFAULT false`);
    this.addSql(`ALTER TABLE contacts ADD COLUMN timezone text, ADD COLUMN quiet_hours jsonb`);
    this.addSql(`
      ALTER TABLE events
        ADD COLUMN send_at timestamptz,
        ADD COLUMN cancellation_key text,
        ADD COLUMN steps jsonb,
        ADD COLUMN digest_event_id uuid`);
    this.addSql(`ALTER TABLE events DROP CONSTRAINT events_status_check`);
    this.addSql(`
      ALTER TABLE events ADD CONSTRAINT events_status_check
        CHECK (status IN ('scheduled', 'queued', 'processing', 'delivered', 'partially_delivered', 'failed', 'skipped', 'canceled', 'digested'))`);
    this.addSql(`CREATE INDEX events_cancellation_key ON events (tenant_id, cancellation_key) WHERE cancellation_key IS NOT NULL`);
    // One row per digest window, keyed by the event that opened it; at most one open window per
    // (tenant, recipient, type, key).
    this.addSql(`
      CREATE TABLE digests (
        opener_event_id uuid PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        external_id text NOT NULL,
        type_key text NOT NULL,
        key text NOT NULL,
        window_end timestamptz NOT NULL,
        max_events integer NOT NULL,
        count integer NOT NULL,
        events jsonb NOT NULL,
        closed_at timestamptz
      )`);
    this.addSql(`CREATE UNIQUE INDEX digests_open ON digests (tenant_id, external_id, type_key, key) WHERE closed_at IS NULL`);
    this.addSql(`
      CREATE TABLE throttle_hits (
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        external_id text NOT NULL,
        type_key text NOT NULL,
        key text NOT NULL,
        event_id uuid NOT NULL,
        at timestamptz NOT NULL
      )`);
    this.addSql(`CREATE INDEX throttle_hits_scope ON throttle_hits (tenant_id, external_id, type_key, key, at)`);
  }

  override down(): void {
    this.addSql(`DROP TABLE throttle_hits, digests`);
    this.addSql(`DROP INDEX events_cancellation_key`);
    this.addSql(`ALTER TABLE events DROP CONSTRAINT events_status_check`);
    this.addSql(`
      ALTER TABLE events ADD CONSTRAINT events_status_check
        CHECK (status IN ('queued', 'processing', 'delivered', 'partially_delivered', 'failed', 'skipped'))`);
    this.addSql(`ALTER TABLE events DROP COLUMN send_at, DROP COLUMN cancellation_key, DROP COLUMN steps, DROP COLUMN digest_event_id`);
    this.addSql(`ALTER TABLE contacts DROP COLUMN timezone, DROP COLUMN quiet_hours`);
    this.addSql(`ALTER TABLE notification_types DROP COLUMN workflow, DROP COLUMN bypass_quiet_hours`);
  }
}

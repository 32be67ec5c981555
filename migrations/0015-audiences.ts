// Audiences: topics (named lists of a tenant's contacts) and broadcasts (one notification type sent to
// a topic or to every contact). A broadcast's events are ordinary events that carry its id; the unique
// index on (broadcast_id, contact_id) is what makes its fan-out write at most one event per contact,
// however often a page is retried. The fan-out's position (the last audience key written) is stored on
// the broadcast row, in the statement that writes the page's events, so a crashed fan-out resumes
// exactly there. A completed broadcast keeps its final counts (its events no longer change). Events
// may be 'canceled' (a canceled broadcast's events never delivered).
import { Migration } from '@mikro-orm/migrations';

const EVENT_STATUSES = `'queued', 'processing', 'delivered', 'partially_delivered', 'failed', 'skipped'`;

export class Audiences extends Migration {
  override name = '0015-audiences';

  up(): void {
    this.addSql(`
      CREATE TABLE topics (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        key text NOT NULL,
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, key)
      )`);
    // Paged by (topic_id, contact_id): the subscriber list and a broadcast's fan-out walk the primary key.
    this.addSql(`
      CREATE TABLE topic_subscriptions (
        topic_id uuid NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
        contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
        tenant_id uuid NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (topic_id, contact_id)
      )`);
    this.addSql(`CREATE INDEX topic_subscriptions_contact ON topic_subscriptions (contact_id)`);
    this.addSql(`
      CREATE TABLE broadcasts (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        type_key text NOT NULL,
        audience jsonb NOT NULL,
        topic_id uuid REFERENCES topics (id) ON DELETE SET NULL,
        brand_key text,
        channels text[],
        variables jsonb NOT NULL DEFAULT '{}',
        secret_variables_ciphertext text,
        secret_keys text[] NOT NULL DEFAULT '{}',
        status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'canceled')),
        send_at timestamptz,
        fan_out_cursor text,
        fanned_out_at timestamptz,
        targeted integer NOT NULL DEFAULT 0,
        events_created integer NOT NULL DEFAULT 0,
        final_counts jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        completed_at timestamptz
      )`);
    this.addSql(`CREATE INDEX broadcasts_tenant ON broadcasts (tenant_id, id DESC)`);
    this.addSql(`ALTER TABLE events ADD COLUMN broadcast_id uuid`);
    this.addSql(`CREATE UNIQUE INDEX events_broadcast_contact ON events (broadcast_id, contact_id) WHERE broadcast_id IS NOT NULL`);
    // Workflows bring 'canceled' (and 'digested') too: the constraint is replaced only where it does not
    // allow 'canceled' yet, and then allows both, so whichever migration runs first, neither undoes the other.
    this.addSql(`
      DO $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'events'::regclass AND conname = 'events_status_check'
                          AND pg_get_constraintdef(oid) LIKE '%''canceled''%') THEN
          ALTER TABLE events DROP CONSTRAINT IF EXISTS events_status_check;
          ALTER TABLE events ADD CONSTRAINT events_status_check CHECK (status IN (${EVENT_STATUSES}, 'canceled', 'digested'));
        END IF;
      END $$`);
  }

  // The event statuses stay: workflows use them as well.
  override down(): void {
    this.addSql(`DROP INDEX events_broadcast_contact`);
    this.addSql(`ALTER TABLE events DROP COLUMN broadcast_id`);
    this.addSql(`DROP TABLE IF EXISTS broadcasts, topic_subscriptions, topics`);
  }
}

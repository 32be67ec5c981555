// Tenant configuration: notification types, email and inbox templates, sender domains, and the
// tenant's default language (the template fallback between the contact's language and the default).
import { Migration } from '@mikro-orm/migrations';

export class Configuration extends Migration {
  override name = '0002-configuration';

  up(): void {
    this.addSql(`ALTER TABLE tenants ADD COLUMN default_language text NOT NULL DEFAULT 'en'`);
    this.addSql(`
      CREATE TABLE notification_types (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        key text NOT NULL,
        name text NOT NULL DEFAULT '',
        description text NOT NULL DEFAULT '',
        channel_defaults jsonb NOT NULL DEFAULT '{"inbox": true, "email": true, "push": false, "web_push": false}',
        opt_out boolean NOT NULL DEFAULT true,
        variables jsonb NOT NULL DEFAULT '[]',
        deleted_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    // One live type per key; deleted ones keep their rows (restorable) and do not block the key.
    this.addSql(`CREATE UNIQUE INDEX notification_types_live_key ON notification_types (tenant_id, key) WHERE deleted_at IS NULL`);
    this.addSql(`CREATE INDEX notification_types_tenant ON notification_types (tenant_id, key)`);
    // Templates fill a slot: type + brand + language. Deleting a brand deletes its templates.
    this.addSql(`
      CREATE TABLE email_templates (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        notification_type_key text NOT NULL,
        brand_key text NOT NULL,
        language text NOT NULL,
        subject text NOT NULL,
        content text NOT NULL CHECK (content <> ''),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, notification_type_key, brand_key, language),
        FOREIGN KEY (tenant_id, brand_key) REFERENCES brands (tenant_id, key) ON DELETE CASCADE
      )`);
    this.addSql(`
      CREATE TABLE inbox_templates (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        notification_type_key text NOT NULL,
        brand_key text NOT NULL,
        language text NOT NULL,
        title text NOT NULL DEFAULT '',
        content text NOT NULL CHECK (content <> ''),
        action_url text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, notification_type_key, brand_key, language),
        FOREIGN KEY (tenant_id, brand_key) REFERENCES brands (tenant_id, key) ON DELETE CASCADE
      )`);
    this.addSql(`
      CREATE TABLE sender_domains (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        domain text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified', 'failed')),
        dkim_selector text NOT NULL,
        dkim_public_key text NOT NULL,
        dkim_private_key_ciphertext text NOT NULL,
        last_checked_at timestamptz,
        last_error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, domain)
      )`);
  }

  override down(): void {
    this.addSql(`DROP TABLE IF EXISTS sender_domains, inbox_templates, email_templates, notification_types`);
    this.addSql(`ALTER TABLE tenants DROP COLUMN IF EXISTS default_language`);
  }
}

// Templates of the text channels, one table per kind, with the slot (type + brand + language, unique
// per tenant) of the email and inbox templates: an SMS's text; a chat message's Markdown content and
// its optional provider-native blocks (Slack, Teams, Discord: JSON whose string leaves are templates);
// an HTTP request's body (a JSON value whose string leaves are templates).
import { Migration } from '@mikro-orm/migrations';

const SLOT = `
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        notification_type_key text NOT NULL,
        brand_key text NOT NULL,
        language text NOT NULL,`;

const STAMPS = `
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tenant_id, notification_type_key, brand_key, language),
        FOREIGN KEY (tenant_id, brand_key) REFERENCES brands (tenant_id, key) ON DELETE CASCADE`;

export class MessageTemplates extends Migration {
  override name = '0007-message-templates';

  up(): void {
    this.addSql(`
      CREATE TABLE sms_templates (${SLOT}
        content text NOT NULL CHECK (content <> ''),${STAMPS}
      )`);
    this.addSql(`
      CREATE TABLE chat_templates (${SLOT}
        content text NOT NULL CHECK (content <> ''),
        blocks jsonb CHECK (jsonb_typeof(blocks) = 'object'),${STAMPS}
      )`);
    this.addSql(`
      CREATE TABLE http_templates (${SLOT}
        body jsonb NOT NULL CHECK (jsonb_typeof(body) IN ('object', 'array')),${STAMPS}
      )`);
  }
}

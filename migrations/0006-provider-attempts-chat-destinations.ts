// What the channels beyond the four (sms, chat, http) need of the shared tables: the channel checks
// of deliveries and preferences take their ids. Each attempt of a remote delivery keeps which
// providers it went through, in order, and how each answered (`provider_attempts`, appended per
// attempt), so a failover shows in the event status and the activity log. A contact's chat
// destinations (server/channels/chat): a person or a team channel on one chat provider; the webhook
// URL, a credential, is stored encrypted and shown only as a hint.
import { Migration } from '@mikro-orm/migrations';

export class ProviderAttemptsChatDestinations extends Migration {
  override name = '0006-provider-attempts-chat-destinations';

  up(): void {
    const channels = `ARRAY['inbox', 'email', 'push', 'web_push', 'sms', 'chat', 'http']`;
    for (const table of ['deliveries', 'contact_preferences']) {
      this.addSql(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_channel_check`);
      this.addSql(`ALTER TABLE ${table} ADD CONSTRAINT ${table}_channel_check CHECK (channel = ANY (${channels}))`);
    }
    this.addSql(`ALTER TABLE deliveries ADD COLUMN provider_attempts jsonb NOT NULL DEFAULT '[]'`);
    this.addSql(`
      CREATE TABLE chat_destinations (
        id uuid PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
        provider text NOT NULL
          CHECK (provider IN ('slack', 'teams', 'discord', 'telegram', 'mattermost', 'google_chat')),
        label text CHECK (length(label) <= 200),
        webhook_url_ciphertext text,
        webhook_url_hint text,
        channel text CHECK (length(channel) <= 200),
        chat_id text CHECK (length(chat_id) <= 200),
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK (webhook_url_ciphertext IS NOT NULL OR channel IS NOT NULL OR chat_id IS NOT NULL)
      )`);
    this.addSql(`CREATE INDEX chat_destinations_contact ON chat_destinations (contact_id, created_at)`);
  }
}

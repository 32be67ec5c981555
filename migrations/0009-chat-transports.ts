// A tenant's chat bot credentials (server/channels/chat): the Slack bot token that posts to a channel
// or user id with chat.postMessage, and the Telegram bot token that sends to a chat id. One row per
// tenant and provider, with its place in the order (`priority`, lower first) and an on/off switch; the
// token is encrypted with the key ring, bound to the tenant and provider.
import { Migration } from '@mikro-orm/migrations';

export class ChatTransports extends Migration {
  override name = '0009-chat-transports';

  up(): void {
    this.addSql(`
      CREATE TABLE chat_transports (
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
        provider text NOT NULL CHECK (provider IN ('slack', 'telegram')),
        priority integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 1000),
        enabled boolean NOT NULL DEFAULT true,
        settings jsonb NOT NULL DEFAULT '{}',
        secrets_ciphertext text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, provider)
      )`);
  }
}

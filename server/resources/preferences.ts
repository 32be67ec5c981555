// The preference matrix: every live notification type x channel, answering the type's channel default
// unless the contact made a choice. Choices count only while the type's opt-out policy is on; when it
// is off they are kept, dormant, and take effect again when the policy is turned back on.
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../base/errors.ts';
import { query, queryOne } from '../base/db/sql.ts';
import { CHANNELS, type Channel } from '../schemas/common.ts';
import type { PreferenceEntry, SetPreferenceRequest } from '../schemas/preferences.ts';
import { emitWebhookEvent } from '../webhooks/emit.ts';

interface TypeRow {
  key: string;
  channel_defaults: Partial<Record<Channel, boolean>>;
  opt_out: boolean;
}

interface ChoiceRow {
  type_key: string;
  channel: Channel;
  enabled: boolean;
}

const CHOICES_OF_CONTACT = `SELECT type_key, channel, enabled FROM contact_preferences
  WHERE contact_id = $1 AND ($2::text IS NULL OR type_key = $2)`;
const LIVE_TYPES = `SELECT key, channel_defaults, opt_out FROM notification_types
  WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY key`;
const LIVE_TYPE = `SELECT key, channel_defaults, opt_out FROM notification_types
  WHERE tenant_id = $1 AND key = $2 AND deleted_at IS NULL`;
const UPSERT_CHOICE = `INSERT INTO contact_preferences (contact_id, tenant_id, type_key, channel, enabled)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (contact_id, type_key, channel) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = now()`;

function entriesFor(type: TypeRow, choices: Map<string, boolean>): PreferenceEntry[] {
  return CHANNELS.map((channel) => {
    const fallback = type.channel_defaults[channel] === true;
    const choice = choices.get(`${type.key}\u0000${channel}`);
    const counts = type.opt_out && choice !== undefined;
    return {
      type: type.key,
      channel,
      enabled: counts ? choice : fallback,
      source: counts ? 'contact' : 'default',
      opt_out: type.opt_out,
    };
  });
}

async function choicesOf(em: EntityManager, contactId: string, typeKey?: string): Promise<Map<string, boolean>> {
  const rows = await query<ChoiceRow>(em, CHOICES_OF_CONTACT, [contactId, typeKey ?? null]);
  return new Map(rows.map((r) => [`${r.type_key}\u0000${r.channel}`, r.enabled]));
}

export async function preferenceMatrix(
  em: EntityManager,
  tenantId: string,
  contactId: string,
): Promise<PreferenceEntry[]> {
  const types = await query<TypeRow>(em, LIVE_TYPES, [tenantId]);
  const choices = await choicesOf(em, contactId);
  return types.flatMap((type) => entriesFor(type, choices));
}

/**
 * Stores one choice (also while the policy is off: it is kept dormant); 404 for a type that is not live.
 * Turning a channel off that was on emits `contact.unsubscribed` in the same transaction.
 */
export async function setPreference(
  em: EntityManager,
  tenantId: string,
  contactId: string,
  input: SetPreferenceRequest,
  source: 'api' | 'one_click' | 'preference_page' | 'sms_reply' = 'api',
): Promise<void> {
  await em.transactional(async (tx) => {
    const type = await queryOne<TypeRow>(tx, LIVE_TYPE, [tenantId, input.type]);
    if (!type) throw notFound('Notification type');
    const before = entriesFor(type, await choicesOf(tx, contactId, input.type)).find(
      (e) => e.channel === input.channel,
    )!;
    await query(tx, UPSERT_CHOICE, [contactId, tenantId, input.type, input.channel, input.enabled]);
    if (type.opt_out && before.enabled && !input.enabled) {
      await emitWebhookEvent(tx, tenantId, 'contact.unsubscribed', {
        contact_id: contactId,
        type: input.type,
        channel: input.channel,
        source,
      });
    }
  });
}

/**
 * The channels a contact receives a live type on, after defaults and preferences (for delivery).
 * null when the type is not live.
 */
export async function enabledChannels(
  em: EntityManager,
  tenantId: string,
  contactId: string,
  typeKey: string,
): Promise<Record<Channel, boolean> | null> {
  const type = await queryOne<TypeRow>(em, LIVE_TYPE, [tenantId, typeKey]);
  if (!type) return null;
  const entries = entriesFor(type, await choicesOf(em, contactId, typeKey));
  return Object.fromEntries(entries.map((e) => [e.channel, e.enabled])) as Record<Channel, boolean>;
}

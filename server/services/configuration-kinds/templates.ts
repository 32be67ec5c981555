// Email and inbox templates in configuration as code, named by their slot (type/brand/language). Only
// templates of live types are configuration: a deleted type's templates wait, untouched, for its restore.
import { query } from '../../db/sql.ts';
import { createTemplate, deleteTemplate, listTemplates, updateTemplate } from '../templates.ts';
import type { ConfigurationKind, KindContext } from './types.ts';

interface Slot {
  notification_type_key: string;
  brand_key?: string;
  language?: string;
}

const slotId = (entry: Slot) => `${entry.notification_type_key}/${entry.brand_key}/${entry.language}`;

async function liveTypeKeys({ tx, tenantId }: KindContext): Promise<Set<string>> {
  const rows = await query<{ key: string }>(tx, `SELECT key FROM notification_types WHERE tenant_id = $1 AND deleted_at IS NULL`, [tenantId]);
  return new Set(rows.map((r) => r.key));
}

async function templateIdOf(ctx: KindContext, kind: 'email' | 'inbox', slot: Slot): Promise<string> {
  const [found] = await listTemplates(ctx.tx, ctx.tenantId, kind, slot);
  if (!found) throw new Error(`${kind} template ${slotId(slot)} vanished during the apply`);
  return found.id;
}

export const emailTemplatesKind: ConfigurationKind<'email_templates'> = {
  name: 'email_templates',
  id: slotId,
  normalise: (entry, ctx) => ({
    notification_type_key: entry.notification_type_key,
    brand_key: entry.brand_key ?? ctx.defaultBrandKey,
    language: entry.language ?? ctx.defaultLanguage,
    subject: entry.subject,
    content: entry.content,
  }),
  async read(ctx) {
    const live = await liveTypeKeys(ctx);
    return (await listTemplates(ctx.tx, ctx.tenantId, 'email', {}))
      .filter((t) => live.has(t.notification_type_key))
      .map((t) => ({ notification_type_key: t.notification_type_key, brand_key: t.brand_key, language: t.language, subject: t.subject, content: t.content }));
  },
  async create(ctx, entry) {
    await createTemplate(ctx.tx, ctx.tenantId, 'email', entry);
  },
  async update(ctx, current, desired) {
    await updateTemplate(ctx.tx, ctx.tenantId, 'email', await templateIdOf(ctx, 'email', current), { subject: desired.subject, content: desired.content });
  },
  async remove(ctx, current) {
    await deleteTemplate(ctx.tx, ctx.tenantId, 'email', await templateIdOf(ctx, 'email', current));
  },
};

export const inboxTemplatesKind: ConfigurationKind<'inbox_templates'> = {
  name: 'inbox_templates',
  id: slotId,
  normalise: (entry, ctx) => ({
    notification_type_key: entry.notification_type_key,
    brand_key: entry.brand_key ?? ctx.defaultBrandKey,
    language: entry.language ?? ctx.defaultLanguage,
    title: entry.title,
    content: entry.content,
    action_url: entry.action_url ?? null,
  }),
  async read(ctx) {
    const live = await liveTypeKeys(ctx);
    return (await listTemplates(ctx.tx, ctx.tenantId, 'inbox', {}))
      .filter((t) => live.has(t.notification_type_key))
      .map((t) => ({
        notification_type_key: t.notification_type_key,
        brand_key: t.brand_key,
        language: t.language,
        title: t.title,
        content: t.content,
        action_url: t.action_url,
      }));
  },
  async create(ctx, entry) {
    await createTemplate(ctx.tx, ctx.tenantId, 'inbox', entry);
  },
  async update(ctx, current, desired) {
    await updateTemplate(ctx.tx, ctx.tenantId, 'inbox', await templateIdOf(ctx, 'inbox', current), {
      title: desired.title,
      content: desired.content,
      action_url: desired.action_url ?? null,
    });
  },
  async remove(ctx, current) {
    await deleteTemplate(ctx.tx, ctx.tenantId, 'inbox', await templateIdOf(ctx, 'inbox', current));
  },
};

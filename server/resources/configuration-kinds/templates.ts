// Templates of every kind in configuration as code, named by their slot (type/brand/language). Only
// templates of live types are configuration: a deleted type's templates wait, untouched, for its restore.
import { query } from '../../base/db/sql.ts';
import type { ConfigurationKindName } from '../../schemas/configuration.ts';
import { createTemplate, deleteTemplate, listTemplates, updateTemplate, type TemplateKind } from '../templates.ts';
import type { ConfigurationKind, Entry, KindContext } from './types.ts';

interface Slot {
  notification_type_key: string;
  brand_key?: string;
  language?: string;
}

const slotId = (entry: Slot) => `${entry.notification_type_key}/${entry.brand_key}/${entry.language}`;

const LIST_LIVE_TYPE_KEYS = `SELECT key FROM notification_types WHERE tenant_id = $1 AND deleted_at IS NULL`;

async function liveTypeKeys({ tx, tenantId }: KindContext): Promise<Set<string>> {
  const rows = await query<{ key: string }>(tx, LIST_LIVE_TYPE_KEYS, [tenantId]);
  return new Set(rows.map((r) => r.key));
}

/** One kind of template: `fields` are its own fields besides the slot, in the order the export writes them. */
function templateKind<N extends ConfigurationKindName & `${TemplateKind}_templates`>(
  name: N,
  kind: TemplateKind,
  fields: ReadonlyArray<keyof Entry<N> & string>,
  defaults: Partial<Record<string, unknown>> = {},
): ConfigurationKind<N> {
  const own = (source: Record<string, unknown>) =>
    Object.fromEntries(fields.map((f) => [f, source[f] ?? defaults[f] ?? null]));
  const templateIdOf = async (ctx: KindContext, slot: Slot): Promise<string> => {
    const [found] = await listTemplates(ctx.tx, ctx.tenantId, kind, slot);
    if (!found) throw new Error(`${kind} template ${slotId(slot)} vanished during the apply`);
    return found.id;
  };
  return {
    name,
    id: slotId,
    normalise: (entry, ctx) =>
      ({
        notification_type_key: entry.notification_type_key,
        brand_key: entry.brand_key ?? ctx.defaultBrandKey,
        language: entry.language ?? ctx.defaultLanguage,
        ...own(entry),
      }) as Entry<N>,
    async read(ctx) {
      const live = await liveTypeKeys(ctx);
      return (await listTemplates(ctx.tx, ctx.tenantId, kind, {}))
        .filter((t) => live.has(t.notification_type_key))
        .map(
          (t) =>
            ({
              notification_type_key: t.notification_type_key,
              brand_key: t.brand_key,
              language: t.language,
              ...own(t),
            }) as Entry<N>,
        );
    },
    async create(ctx, entry) {
      await createTemplate(ctx.tx, ctx.tenantId, kind, entry);
    },
    async update(ctx, current, desired) {
      await updateTemplate(ctx.tx, ctx.tenantId, kind, await templateIdOf(ctx, current), own(desired));
    },
    async remove(ctx, current) {
      await deleteTemplate(ctx.tx, ctx.tenantId, kind, await templateIdOf(ctx, current));
    },
  };
}

export const emailTemplatesKind = templateKind('email_templates', 'email', ['subject', 'content']);
export const inboxTemplatesKind = templateKind('inbox_templates', 'inbox', ['title', 'content', 'action_url'], {
  title: '',
});
export const smsTemplatesKind = templateKind('sms_templates', 'sms', ['content']);
export const chatTemplatesKind = templateKind('chat_templates', 'chat', ['content', 'blocks']);
export const httpTemplatesKind = templateKind('http_templates', 'http', ['body']);

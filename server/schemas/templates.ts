// Email and inbox templates (one slot = notification type + brand + language), the email preview and
// the "affected by a variable change" report.
import { z } from 'zod';
import { JsonValue, isoDateTime, languageTag, resourceKey } from './common.ts';

/** The most a template field may hold (the engine's parse limit). */
export const TEMPLATE_MAX = 100_000;

const content = z
  .string()
  .max(TEMPLATE_MAX)
  .refine((v) => v.trim().length > 0, { message: 'must not be empty' });
const subject = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(998)
  .regex(/^[^\r\n]*$/, 'must be one line');
const actionUrl = z
  .string()
  .trim()
  .max(2048)
  .refine((v) => !/^\s*(javascript|data|vbscript):/i.test(v), { message: 'must not use a script or data URL' });

const slotFields = {
  notification_type_key: resourceKey,
  brand_key: resourceKey.optional().describe("Defaults to the tenant's default brand"),
  language: languageTag.optional().describe("Defaults to the tenant's default language"),
};

export const CreateEmailTemplateRequest = z
  .object({
    ...slotFields,
    subject: subject.describe('Text with {{ placeholders }}'),
    content: content.describe(
      'An HTML fragment with {{ placeholders }} (their values are HTML-escaped); wrapped in the brand layout',
    ),
  })
  .meta({ id: 'CreateEmailTemplateRequest' });
export type CreateEmailTemplateRequest = z.infer<typeof CreateEmailTemplateRequest>;

export const UpdateEmailTemplateRequest = z
  .object({
    notification_type_key: resourceKey.optional(),
    brand_key: resourceKey.optional(),
    language: languageTag.optional(),
    subject: subject.optional(),
    content: content.optional(),
  })
  .meta({ id: 'UpdateEmailTemplateRequest' });
export type UpdateEmailTemplateRequest = z.infer<typeof UpdateEmailTemplateRequest>;

export const EmailTemplateResponse = z
  .object({
    id: z.string(),
    notification_type_key: z.string(),
    brand_key: z.string(),
    language: z.string(),
    subject: z.string(),
    content: z.string(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'EmailTemplateResponse' });
export type EmailTemplateResponse = z.infer<typeof EmailTemplateResponse>;

export const CreateInboxTemplateRequest = z
  .object({
    ...slotFields,
    title: z.string().max(1000).default('').describe('Text with {{ placeholders }}'),
    content: content.describe('The body: text with {{ placeholders }}'),
    action_url: actionUrl.nullable().optional().describe('Where the item leads; may hold {{ placeholders }}'),
  })
  .meta({ id: 'CreateInboxTemplateRequest' });
export type CreateInboxTemplateRequest = z.infer<typeof CreateInboxTemplateRequest>;

export const UpdateInboxTemplateRequest = z
  .object({
    notification_type_key: resourceKey.optional(),
    brand_key: resourceKey.optional(),
    language: languageTag.optional(),
    title: z.string().max(1000).optional(),
    content: content.optional(),
    action_url: actionUrl.nullable().optional(),
  })
  .meta({ id: 'UpdateInboxTemplateRequest' });
export type UpdateInboxTemplateRequest = z.infer<typeof UpdateInboxTemplateRequest>;

export const InboxTemplateResponse = z
  .object({
    id: z.string(),
    notification_type_key: z.string(),
    brand_key: z.string(),
    language: z.string(),
    title: z.string(),
    content: z.string(),
    action_url: z.string().nullable(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'InboxTemplateResponse' });
export type InboxTemplateResponse = z.infer<typeof InboxTemplateResponse>;

export const TemplateListQuery = z.object({
  notification_type_key: resourceKey.optional().describe('Only templates of this type'),
  brand_key: resourceKey.optional().describe('Only templates of this brand'),
  language: languageTag.optional().describe('Only templates in this language'),
});
export type TemplateListQuery = z.infer<typeof TemplateListQuery>;

export const TemplateParams = z.object({ template_id: z.uuid({ message: 'must be a template id (UUID)' }) });

export const RenderRequest = z
  .object({
    notification_type_key: resourceKey,
    brand_key: resourceKey.optional().describe("Defaults to the tenant's default brand"),
    language: languageTag.optional().describe("Defaults to the tenant's default language"),
    variables: z.record(z.string(), JsonValue).default({}).describe("Merged over the brand's values"),
    contact: z
      .record(z.string(), JsonValue)
      .optional()
      .describe('Sample recipient fields for {{ contact.* }} placeholders'),
  })
  .meta({ id: 'RenderRequest' });
export type RenderRequest = z.infer<typeof RenderRequest>;

export const RenderedEmailResponse = z
  .object({ subject: z.string(), html: z.string(), text: z.string() })
  .meta({ id: 'RenderedEmailResponse' });

export const AffectedTemplateResponse = z
  .object({
    template_id: z.string(),
    brand_key: z.string(),
    language: z.string(),
    missing_variables: z
      .array(z.string())
      .describe('Placeholders the type no longer declares and the brand does not fill'),
  })
  .meta({ id: 'AffectedTemplateResponse' });

export const AffectedByParams = z.object({ notification_type_key: resourceKey });

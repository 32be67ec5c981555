// Templates of every kind (one slot = notification type + brand + language), the previews and the
// "affected by a variable change" report of email templates.
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

/** How deep a JSON template may nest (a chat card or a request body needs a few levels, never dozens). */
const JSON_TEMPLATE_DEPTH = 32;

/** Whether a JSON value nests at most `max` arrays and objects deep (iteratively: the input is untrusted). */
function nestsWithin(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= max) return false;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return true;
}

/** A JSON value whose string leaves are templates, bounded in depth and size as a template field is. */
function jsonTemplate<T extends z.ZodType>(schema: T) {
  return schema
    .refine((v) => nestsWithin(v, JSON_TEMPLATE_DEPTH), {
      message: `must not nest more than ${JSON_TEMPLATE_DEPTH} levels deep`,
      abort: true,
    })
    .refine((v) => JSON.stringify(v).length <= TEMPLATE_MAX, {
      message: `must be at most ${TEMPLATE_MAX} characters as JSON`,
    });
}

const jsonObject = z.record(z.string(), JsonValue);

export const SmsTemplateFields = {
  content: content.describe('The text: {{ placeholders }} rendered as they are (no escaping)'),
};

export const CreateSmsTemplateRequest = z
  .object({ ...slotFields, ...SmsTemplateFields })
  .meta({ id: 'CreateSmsTemplateRequest' });
export type CreateSmsTemplateRequest = z.infer<typeof CreateSmsTemplateRequest>;

export const UpdateSmsTemplateRequest = z
  .object({
    notification_type_key: resourceKey.optional(),
    brand_key: resourceKey.optional(),
    language: languageTag.optional(),
    content: content.optional(),
  })
  .meta({ id: 'UpdateSmsTemplateRequest' });
export type UpdateSmsTemplateRequest = z.infer<typeof UpdateSmsTemplateRequest>;

const slotResponseFields = {
  id: z.string(),
  notification_type_key: z.string(),
  brand_key: z.string(),
  language: z.string(),
};

export const SmsTemplateResponse = z
  .object({ ...slotResponseFields, content: z.string(), created_at: isoDateTime, updated_at: isoDateTime })
  .meta({ id: 'SmsTemplateResponse' });
export type SmsTemplateResponse = z.infer<typeof SmsTemplateResponse>;

export const ChatBlocks = jsonTemplate(
  z
    .object({
      slack: z.array(jsonObject).min(1).max(50).optional().describe('Slack Block Kit blocks'),
      teams: jsonObject.optional().describe('A Microsoft Teams Adaptive Card'),
      discord: z.array(jsonObject).min(1).max(10).optional().describe('Discord embeds'),
    })
    .strict(),
)
  .describe(
    "Each provider's own message blocks, used instead of the content for that provider: JSON whose string leaves are templates rendered as text",
  )
  .meta({ id: 'ChatBlocks' });
export type ChatBlocks = z.infer<typeof ChatBlocks>;

export const CreateChatTemplateRequest = z
  .object({
    ...slotFields,
    content: content.describe(
      'Markdown (bold, italic, code, links, lists) with {{ placeholders }}; each provider gets it in its own dialect',
    ),
    blocks: ChatBlocks.nullable().optional(),
  })
  .meta({ id: 'CreateChatTemplateRequest' });
export type CreateChatTemplateRequest = z.infer<typeof CreateChatTemplateRequest>;

export const UpdateChatTemplateRequest = z
  .object({
    notification_type_key: resourceKey.optional(),
    brand_key: resourceKey.optional(),
    language: languageTag.optional(),
    content: content.optional(),
    blocks: ChatBlocks.nullable().optional().describe('null removes the blocks'),
  })
  .meta({ id: 'UpdateChatTemplateRequest' });
export type UpdateChatTemplateRequest = z.infer<typeof UpdateChatTemplateRequest>;

export const ChatTemplateResponse = z
  .object({
    ...slotResponseFields,
    content: z.string(),
    blocks: z
      .object({ slack: JsonValue.optional(), teams: JsonValue.optional(), discord: JsonValue.optional() })
      .nullable(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'ChatTemplateResponse' });
export type ChatTemplateResponse = z.infer<typeof ChatTemplateResponse>;

const httpBody = jsonTemplate(z.union([jsonObject, z.array(JsonValue)])).describe(
  'The request body as JSON (an object or a list): every string leaf is a template rendered as text into a string; ' +
    'a leaf that is one placeholder alone ("{{ order }}") takes the value itself (a number, an object, ...). ' +
    'Keys are literal. So the body is valid JSON whatever the values hold.',
);

export const CreateHttpTemplateRequest = z
  .object({ ...slotFields, body: httpBody })
  .meta({ id: 'CreateHttpTemplateRequest' });
export type CreateHttpTemplateRequest = z.infer<typeof CreateHttpTemplateRequest>;

export const UpdateHttpTemplateRequest = z
  .object({
    notification_type_key: resourceKey.optional(),
    brand_key: resourceKey.optional(),
    language: languageTag.optional(),
    body: httpBody.optional(),
  })
  .meta({ id: 'UpdateHttpTemplateRequest' });
export type UpdateHttpTemplateRequest = z.infer<typeof UpdateHttpTemplateRequest>;

export const HttpTemplateResponse = z
  .object({ ...slotResponseFields, body: JsonValue, created_at: isoDateTime, updated_at: isoDateTime })
  .meta({ id: 'HttpTemplateResponse' });
export type HttpTemplateResponse = z.infer<typeof HttpTemplateResponse>;

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

export const RenderedSmsResponse = z
  .object({
    text: z.string(),
    encoding: z.enum(['gsm7', 'ucs2']).describe('GSM-7 when every character is in its alphabet, else UCS-2'),
    segments: z
      .number()
      .int()
      .describe('The messages the text is sent in (160/153 GSM-7 septets, 70/67 UCS-2 code units)'),
  })
  .meta({ id: 'RenderedSmsResponse' });

export const RenderedChatResponse = z
  .object({
    text: z.string().describe("The chat template's Markdown, else the inbox template's title and body"),
    blocks: z
      .object({ slack: JsonValue.optional(), teams: JsonValue.optional(), discord: JsonValue.optional() })
      .nullable()
      .describe("Each provider's blocks rendered; null when the template has none"),
  })
  .meta({ id: 'RenderedChatResponse' });

export const RenderedHttpResponse = z.object({ body: JsonValue }).meta({ id: 'RenderedHttpResponse' });

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

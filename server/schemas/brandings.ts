// Brands: a named set of values templates render against, and the sender settings of its emails.
import { z } from 'zod';
import { JsonValue, email, resourceKey } from './common.ts';
import { RESERVED_VARIABLE_NAMES, VARIABLE_NAME } from './notification-types.ts';

export const HEX_COLOUR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
const MAX_VALUE_KEYS = 50;

/** An http(s) URL (logos are fetched by mail clients: no other scheme makes sense there). */
export const httpUrl = z
  .string()
  .trim()
  .max(2048)
  .pipe(z.url({ protocol: /^https?$/, message: 'must be an http or https URL' }));

/** No line breaks or other control characters: these values end up in mail headers. */
const headerSafe = (max: number) =>
  z
    .string()
    .trim()
    .max(max)
    .regex(/^[^\p{Cc}]*$/u, 'must not contain control characters or line breaks');

/**
 * values: name, colour (#rgb or #rrggbb), logo_url, and free keys usable as template variables
 * ({{ support_email }}); free keys must be variable names and cannot be `brand` or `contact`.
 */
export const BrandValues = z
  .object({
    name: z.string().trim().max(200).optional(),
    colour: z.string().regex(HEX_COLOUR, 'must be a hex colour like #1a2b3c').optional(),
    logo_url: httpUrl.optional(),
  })
  .catchall(JsonValue)
  .superRefine((values, ctx) => {
    const keys = Object.keys(values);
    if (keys.length > MAX_VALUE_KEYS) ctx.addIssue({ code: 'custom', message: `at most ${MAX_VALUE_KEYS} values` });
    for (const key of keys) {
      if (!VARIABLE_NAME.test(key)) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: 'value names must be letters, digits or _ (at most 64, not starting with a digit or __)',
        });
      } else if ((RESERVED_VARIABLE_NAMES as readonly string[]).includes(key)) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'brand and contact are reserved names' });
      }
    }
  });
export type BrandValues = z.infer<typeof BrandValues>;

const senderFields = {
  from_name: headerSafe(200).nullable().optional(),
  from_email: email.nullable().optional(),
  reply_to: email.nullable().optional(),
};

export const CreateBrandingRequest = z
  .object({
    key: resourceKey,
    values: BrandValues.default({}),
    sender: z.object(senderFields).default({}),
  })
  .meta({ id: 'CreateBrandingRequest' });
export type CreateBrandingRequest = z.infer<typeof CreateBrandingRequest>;

export const SetBrandingValuesRequest = z.object({ values: BrandValues }).meta({ id: 'SetBrandingValuesRequest' });

export const SetBrandingSenderRequest = z.object(senderFields).meta({ id: 'SetBrandingSenderRequest' });
export type BrandSender = z.infer<typeof SetBrandingSenderRequest>;

export const BrandingResponse = z
  .object({
    key: z.string(),
    values: z.record(z.string(), z.unknown()),
    sender: z.object({
      from_name: z.string().nullable(),
      from_email: z.string().nullable(),
      reply_to: z.string().nullable(),
    }),
    is_default: z.boolean(),
    warnings: z
      .array(z.string())
      .describe(
        "What the brand's settings will not do: a sender.from_email the install's default SMTP will not send from",
      ),
  })
  .meta({ id: 'BrandingResponse' });
export type BrandingResponse = z.infer<typeof BrandingResponse>;

export const BrandingParams = z.object({ key: resourceKey });

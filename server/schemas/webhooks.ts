// Outbound webhook endpoints and the deliveries of their events (the attempts log).
import { z } from 'zod';
import { cursorPage, idParam, isoDateTime } from './common.ts';

export const WEBHOOK_EVENT_TYPES = [
  'event.completed',
  'delivery.sent',
  'delivery.failed',
  'delivery.skipped',
  'inbox.read',
  'inbox.archived',
  'contact.unsubscribed',
  'email.bounced',
  'email.complained',
  'push_subscription.pruned',
  'broadcast.completed',
  'webhook.test',
] as const;

export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES).meta({ id: 'WebhookEventType' });
export type WebhookEventType = z.infer<typeof WebhookEventType>;

const webhookUrl = z
  .string()
  .trim()
  .max(2048)
  .pipe(z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }));

const eventTypes = z
  .array(WebhookEventType)
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length)
  .transform((types) => [...new Set(types)]);

const description = z.string().trim().max(500);

export const CreateWebhookRequest = z
  .object({ url: webhookUrl, event_types: eventTypes, description: description.default('') })
  .meta({ id: 'CreateWebhookRequest' });
export type CreateWebhookRequest = z.infer<typeof CreateWebhookRequest>;

export const UpdateWebhookRequest = z
  .object({
    url: webhookUrl.optional(),
    event_types: eventTypes.optional(),
    description: description.optional(),
    /** true re-enables an endpoint that was disabled (its pending deliveries resume). */
    enabled: z.boolean().optional(),
  })
  .meta({ id: 'UpdateWebhookRequest' });
export type UpdateWebhookRequest = z.infer<typeof UpdateWebhookRequest>;

export const WebhookResponse = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string(),
    event_types: z.array(WebhookEventType),
    enabled: z.boolean(),
    /** Why Herald disabled the endpoint ('gone': it answered 410; 'failing': three days of failures). */
    disabled_reason: z.string().nullable(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'WebhookResponse' });
export type WebhookResponse = z.infer<typeof WebhookResponse>;

/** Creation and rotation answers: the signing secret, shown this once. */
export const WebhookWithSecretResponse = WebhookResponse.extend({ secret: z.string() }).meta({
  id: 'WebhookWithSecretResponse',
});

export const WebhookListResponse = z
  .object({ items: z.array(WebhookResponse), next_cursor: z.string().nullable() })
  .meta({ id: 'WebhookListResponse' });

export const WebhookIdParams = z.object({ id: idParam });
export const WebhookDeliveryParams = z.object({ id: idParam, delivery_id: idParam });

export const WebhookDeliveryStatus = z.enum(['pending', 'succeeded', 'failed']).meta({ id: 'WebhookDeliveryStatus' });

export const WebhookDeliveryResponse = z
  .object({
    id: z.string(),
    event_type: WebhookEventType,
    status: WebhookDeliveryStatus,
    attempts: z.number().int(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    next_attempt_at: isoDateTime.nullable(),
    created_at: isoDateTime,
  })
  .meta({ id: 'WebhookDeliveryResponse' });
export type WebhookDeliveryResponse = z.infer<typeof WebhookDeliveryResponse>;

export const WebhookDeliveryListResponse = z
  .object({ items: z.array(WebhookDeliveryResponse), next_cursor: z.string().nullable() })
  .meta({ id: 'WebhookDeliveryListResponse' });

const cursor = z
  .string()
  .regex(/^\d{1,19}$/, 'must be a cursor from next_cursor')
  .optional();

export const WebhookListQuery = z.object({ limit: cursorPage.limit, cursor: z.string().max(128).optional() });
export const WebhookDeliveryListQuery = z.object({
  status: WebhookDeliveryStatus.optional(),
  limit: cursorPage.limit,
  cursor,
});
export type WebhookDeliveryListQuery = z.infer<typeof WebhookDeliveryListQuery>;

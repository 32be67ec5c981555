// Broadcasts: one notification type sent to a topic or to every contact of the tenant.
import { z } from 'zod';
import { Channel, cursorPage, isoDateTime, resourceKey } from './common.ts';
import { uuidParam } from './contacts.ts';

export const BroadcastAudience = z
  .union([z.object({ topic: resourceKey }).strict(), z.object({ all_contacts: z.literal(true) }).strict()])
  .meta({ id: 'BroadcastAudience', description: '{"topic": key} or {"all_contacts": true}' });
export type BroadcastAudience = z.infer<typeof BroadcastAudience>;

export const BroadcastRequest = z
  .object({
    type: resourceKey,
    audience: BroadcastAudience,
    variables: z.record(z.string(), z.unknown()).default({}),
    /** Encrypted at rest (per event once fanned out), masked everywhere Herald shows them. */
    secret_variables: z.record(z.string(), z.unknown()).default({}),
    brand: resourceKey.optional(),
    /** Narrows the type's channel defaults, as for a trigger. */
    channels: z.array(Channel).min(1).max(4).optional(),
    /** The fan-out starts then (now when absent or past). */
    send_at: isoDateTime.optional(),
  })
  .meta({ id: 'BroadcastRequest' });
export type BroadcastRequest = z.infer<typeof BroadcastRequest>;

export const BroadcastStatus = z
  .enum(['queued', 'running', 'completed', 'canceled', 'failed'])
  .meta({ id: 'BroadcastStatus' });
export type BroadcastStatus = z.infer<typeof BroadcastStatus>;

export const BroadcastAccepted = z
  .object({ broadcast_id: z.string(), status: z.literal('queued') })
  .meta({ id: 'BroadcastAccepted' });
export type BroadcastAccepted = z.infer<typeof BroadcastAccepted>;

export const BroadcastCounts = z
  .object({
    delivered: z.number().int().describe('events delivered (partially_delivered included)'),
    failed: z.number().int(),
    skipped: z.number().int(),
    canceled: z.number().int(),
    pending: z.number().int().describe('events queued or processing'),
  })
  .meta({ id: 'BroadcastCounts' });
export type BroadcastCounts = z.infer<typeof BroadcastCounts>;

export const BroadcastResponse = z
  .object({
    broadcast_id: z.string(),
    type: z.string(),
    audience: BroadcastAudience,
    status: BroadcastStatus,
    /** The audience's size when the fan-out started (0 before). */
    targeted: z.number().int(),
    events_created: z.number().int(),
    counts: BroadcastCounts,
    send_at: isoDateTime.nullable(),
    created_at: isoDateTime,
    completed_at: isoDateTime.nullable(),
    /** Why the fan-out gave up (status 'failed'); null otherwise. */
    failure_reason: z.string().nullable(),
  })
  .meta({ id: 'BroadcastResponse' });
export type BroadcastResponse = z.infer<typeof BroadcastResponse>;

export const BroadcastPage = z
  .object({ items: z.array(BroadcastResponse), next_cursor: z.string().nullable() })
  .meta({ id: 'BroadcastPage' });
export type BroadcastPage = z.infer<typeof BroadcastPage>;

export const BroadcastParams = z.object({ broadcast_id: uuidParam });

export const BroadcastListQuery = z.object({ status: BroadcastStatus.optional(), ...cursorPage });
export type BroadcastListQuery = z.infer<typeof BroadcastListQuery>;

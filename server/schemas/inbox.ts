// The in-app inbox of a contact and its real-time counts.
import { z } from 'zod';
import { cursorPage, FreeFormObject, isoDateTime, queryBoolean } from './common.ts';
import { uuidParam } from './contacts.ts';

export const InboxItemResponse = z
  .object({
    id: z.string(),
    event_id: z.string().nullable(),
    type: z.string(),
    title: z.string(),
    body: z.string(),
    action_url: z.string().nullable(),
    data: FreeFormObject,
    created_at: isoDateTime,
    seen_at: isoDateTime.nullable(),
    read_at: isoDateTime.nullable(),
    archived_at: isoDateTime.nullable(),
  })
  .meta({ id: 'InboxItemResponse' });
export type InboxItemResponse = z.infer<typeof InboxItemResponse>;

export const InboxListQuery = z.object({
  limit: cursorPage.limit,
  cursor: uuidParam.optional().describe('next_cursor of the previous page'),
  status: z.enum(['all', 'unread', 'read']).default('all'),
  archived: queryBoolean.default(false).describe('false: items not archived; true: only archived items'),
});
export type InboxListQuery = z.infer<typeof InboxListQuery>;

export const InboxListResponse = z
  .object({
    items: z.array(InboxItemResponse),
    next_cursor: z.string().nullable(),
    /** Unread items that are not archived, whatever the filters. */
    unread_count: z.number().int(),
  })
  .meta({ id: 'InboxListResponse' });

export const UpdateInboxItemRequest = z
  .object({ read: z.boolean().optional(), seen: z.boolean().optional(), archived: z.boolean().optional() })
  .refine(
    (v) => v.read !== undefined || v.seen !== undefined || v.archived !== undefined,
    'give at least one of read, seen, archived',
  )
  .meta({ id: 'UpdateInboxItemRequest' });
export type UpdateInboxItemRequest = z.infer<typeof UpdateInboxItemRequest>;

export const ReadAllResponse = z.object({ updated: z.number().int() }).meta({ id: 'ReadAllResponse' });

/** The payload of a stream `counts` event. */
export const InboxCounts = z
  .object({ unread_count: z.number().int(), unseen_count: z.number().int() })
  .meta({ id: 'InboxCounts' });
export type InboxCounts = z.infer<typeof InboxCounts>;

export const InboxItemParams = z.object({ id: uuidParam, notification_id: uuidParam });

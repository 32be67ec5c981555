// The audit log's shapes: one entry per management write, and the filtered page of them.
import { z } from 'zod';
import { JsonValue, cursorPage, idParam, isoDateTime } from './common.ts';

export const AuditEntryResponse = z
  .object({
    id: z.string(),
    at: isoDateTime,
    tenant_id: z.string().nullable(),
    actor: z.object({
      kind: z.enum(['user', 'service_key', 'cli']),
      id: z.string().nullable(),
      email: z.string().nullable(),
      name: z
        .string()
        .nullable()
        .meta({ description: "A service key's name (its current one, revoked keys included); null for other actors" }),
    }),
    action: z.string().meta({ description: 'What was done, e.g. brand.create, api_key.delete, member.update' }),
    target: z.object({ kind: z.string(), id: z.string().nullable() }),
    ip: z.string().nullable(),
    request_id: z.string().nullable(),
    changes: JsonValue.nullable().meta({
      description: 'The request body of the write, secret fields masked as "********"',
    }),
  })
  .meta({ id: 'AuditEntryResponse' });
export type AuditEntryResponse = z.infer<typeof AuditEntryResponse>;

export const AuditPage = z
  .object({ items: z.array(AuditEntryResponse), next_cursor: z.string().nullable() })
  .meta({ id: 'AuditPage' });
export type AuditPage = z.infer<typeof AuditPage>;

export const AuditListQuery = z.object({
  actor: z.string().min(1).max(254).optional().meta({ description: "An actor's id or email" }),
  action: z.string().min(1).max(100).optional().meta({ description: 'An action, or a prefix ending in * (brand.*)' }),
  since: isoDateTime.optional(),
  cursor: idParam.max(512).optional(),
  limit: cursorPage.limit,
});
export type AuditListQuery = z.infer<typeof AuditListQuery>;

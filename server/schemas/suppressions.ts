// The tenant's email suppression list: addresses the email channel never sends to.
import { z } from 'zod';
import { cursorPage, email, isoDateTime } from './common.ts';

export const SuppressionReason = z
  .enum(['hard_bounce', 'soft_bounces', 'complaint', 'manual'])
  .meta({ id: 'SuppressionReason' });
export type SuppressionReason = z.infer<typeof SuppressionReason>;

export const SuppressionResponse = z
  .object({ email: z.string(), reason: SuppressionReason, created_at: isoDateTime })
  .meta({ id: 'SuppressionResponse' });
export type SuppressionResponse = z.infer<typeof SuppressionResponse>;

export const SuppressionListResponse = z
  .object({ items: z.array(SuppressionResponse), next_cursor: z.string().nullable() })
  .meta({ id: 'SuppressionListResponse' });

export const AddSuppressionRequest = z.object({ email }).meta({ id: 'AddSuppressionRequest' });

export const SuppressionListQuery = z.object({
  /** Only this address (exact, case-insensitive). */
  email: email.optional(),
  limit: cursorPage.limit,
  cursor: z.string().max(300).optional(),
});
export type SuppressionListQuery = z.infer<typeof SuppressionListQuery>;

export const SuppressionParams = z.object({ email });

// Shapes of data requests (/v1/auth/tenants/{tenant_id}/data-requests): exports and deletions of a tenant's data.
import { z } from 'zod';

export const DataRequestBody = z.object({ kind: z.enum(['export', 'delete']) }).meta({ id: 'DataRequestBody' });
export const DataRequestResponse = z
  .object({
    id: z.string(),
    kind: z.enum(['export', 'delete']),
    status: z.enum(['queued', 'running', 'completed', 'failed']),
    created_at: z.string(),
    completed_at: z.string().nullable(),
    /** For a completed export: where the owner downloads the file (with the access token). */
    download_url: z.string().nullable(),
    error: z.string().nullable(),
  })
  .meta({ id: 'DataRequestResponse' });
export const DataRequestParams = z.object({
  tenant_id: z.uuid({ message: 'must be a tenant id' }),
  id: z.uuid({ message: 'must be a data request id' }),
});

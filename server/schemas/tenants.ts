// Shapes of tenants and sessions (/v1/auth/tenants, /v1/auth/session).
import { z } from 'zod';
import { queryBoolean } from './common.ts';
import { tenantName } from './auth.ts';

export const Role = z.enum(['owner', 'admin']).meta({ id: 'Role' });

const ORIGIN_MESSAGE = 'must be an origin: http(s)://host or http(s)://host:port, no path, no wildcard';

/**
 * A browser origin as a browser's Origin header carries it: http or https, a host, an optional port,
 * nothing after. Stored as the URL standard serialises it (lowercase host, punycode, no default port),
 * the form browsers send, so a request's Origin matches by string equality. '*' is refused: the
 * list narrows what a tenant's contact tokens answer, and any-origin access is the operator's to
 * grant, with the install's corsOrigins; 'null' (sandboxed frames, file: pages) is refused as well.
 */
export const browserOrigin = z
  .string()
  .trim()
  .max(300)
  .regex(/^https?:\/\/[^/?#@*\s\\]+$/i, ORIGIN_MESSAGE)
  .transform((value, ctx) => {
    const origin = originOf(value);
    if (origin !== null) return origin;
    ctx.issues.push({ code: 'custom', message: ORIGIN_MESSAGE, input: value });
    return z.NEVER;
  });

function originOf(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  const host = /^\[[0-9a-f:.]+\]$|^[a-z0-9.-]+$/.test(url.hostname);
  return host && url.hostname !== '' && url.username === '' && url.password === '' ? url.origin : null;
}

/** The browser origins a tenant's contact tokens answer (server/api/app.ts), each once. */
export const tenantCorsOrigins = z
  .array(browserOrigin)
  .max(50, 'at most 50 origins')
  .transform((origins) => [...new Set(origins)]);

export const CreateTenantRequest = z.object({ name: tenantName }).meta({ id: 'CreateTenantRequest' });
export const UpdateTenantRequest = z
  .object({
    name: tenantName.optional(),
    require_mfa: z.boolean().optional().describe('Require a second factor of every member (owner only)'),
    cors_origins: tenantCorsOrigins
      .optional()
      .describe(
        'The browser origins (https://app.example.com) allowed to call the routes its contact tokens reach; ' +
          'replaces the list, [] clears it',
      ),
  })
  .refine((v) => v.name !== undefined || v.require_mfa !== undefined || v.cors_origins !== undefined, {
    message: 'give name, require_mfa or cors_origins',
  })
  .meta({ id: 'UpdateTenantRequest' });
export const SessionRequest = z
  .object({ tenant_id: z.uuid({ message: 'must be a tenant id' }), remember: z.boolean().default(false) })
  .meta({ id: 'SessionRequest' });

export const TenantResponse = z
  .object({
    id: z.string(),
    name: z.string(),
    archived: z.boolean(),
    role: Role,
    is_default: z.boolean(),
    require_mfa: z.boolean(),
    cors_origins: z.array(z.string()),
    created_at: z.string(),
  })
  .meta({ id: 'TenantResponse' });

export const TenantParams = z.object({ tenant_id: z.uuid({ message: 'must be a tenant id' }) });
export const ListTenantsQuery = z.object({ include_archived: queryBoolean.default(false) });

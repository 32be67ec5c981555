// Request and response shapes of the tenant's http channel transport (PUT/GET/DELETE
// /v1/http-transport, its secret rotation and test send). Header values and the signing secret appear
// only in requests, save the secret in the one answer that creates or rotates it.
import { z } from 'zod';
import { isoDateTime, withoutUrlCredentials } from './common.ts';

/** Headers Herald sets itself (the signature, the body's framing) or that HTTP/2 forbids. */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'content-type',
  'content-length',
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

export const MAX_HEADERS = 20;

const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/, 'must be an HTTP header name (letters, digits, - and the like)')
  .refine((name) => !RESERVED_HEADERS.has(name.toLowerCase()), 'is set by Herald and cannot be given');

const headerValue = z
  .string()
  .max(4096)
  // Printable characters and tabs only: a CR or LF would end the header and start another.
  .regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'must be printable text on one line');

/** Headers a tenant has Herald send with each request (the http channel, the SMS gateway): write-only. */
export const tenantHeaders = z
  .record(headerName, headerValue)
  .refine((h) => Object.keys(h).length <= MAX_HEADERS, `at most ${MAX_HEADERS} headers`)
  .refine(
    (h) => new Set(Object.keys(h).map((k) => k.toLowerCase())).size === Object.keys(h).length,
    'a header is named twice (header names are case-insensitive)',
  );

export const HttpTransportRequest = z
  .object({
    url: z
      .string()
      .trim()
      .max(2048)
      .pipe(z.url({ protocol: /^https?$/, message: 'must be an https URL' }))
      .refine(withoutUrlCredentials, { message: 'must not hold a user name or password: put credentials in headers' }),
    /**
     * Write-only (they often carry credentials). Omitted: the stored ones are kept (not when the URL's
     * origin changes); {}: none.
     */
    headers: tenantHeaders.optional(),
    include_secret_variables: z
      .boolean()
      .default(false)
      .describe('Send secret variables in clear in the default body (otherwise masked as "********")'),
  })
  .meta({ id: 'HttpTransportRequest' });
export type HttpTransportRequest = z.infer<typeof HttpTransportRequest>;

export const HttpTransportResponse = z
  .object({
    url: z.string(),
    header_names: z.array(z.string()).describe('The names of the stored headers; their values are never returned'),
    include_secret_variables: z.boolean(),
    /** The headers or the signing secret were encrypted with a key no longer in the key ring: set them again. */
    credentials_unreadable: z.boolean(),
    secret: z
      .string()
      .optional()
      .describe(
        'The signing secret (whsec_...), only in the answer that creates the transport (or rotates the secret): shown this once',
      ),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'HttpTransportResponse' });
export type HttpTransportResponse = z.infer<typeof HttpTransportResponse>;

export const HttpTransportWithSecretResponse = HttpTransportResponse.extend({ secret: z.string() }).meta({
  id: 'HttpTransportWithSecretResponse',
});

export const SendTestHttpResponse = z
  .object({
    ok: z.boolean(),
    /** The endpoint's HTTP status; null when no answer came (refused, timed out, not a public address). */
    status: z.number().int().nullable(),
    message_id: z.string().optional().describe('The `id` of the JSON answer, when it has one'),
    error: z.string().optional(),
  })
  .meta({ id: 'SendTestHttpResponse' });
export type SendTestHttpResult = z.infer<typeof SendTestHttpResponse>;

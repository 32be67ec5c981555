// The tenant's http channel transport: create or replace (the signing secret is generated on create
// and shown that once), read (header names only, never their values nor the secret), remove, rotate
// the secret (shown once), and a test send. URLs are https unless allowPrivateWebhookUrls, and must
// reach public addresses unless it is set; the send checks the address again as it connects.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, invalidField } from '../../base/errors.ts';
import { newId } from '../../base/ids.ts';
import { hostRefusal } from '../../base/net/public-address.ts';
import { allowsPrivate } from '../../base/net/allow-private.ts';
import { toIsoTimestamp } from '../../base/timestamps.ts';
import type { Context } from '../../base/context.ts';
import type { HttpTransportRequest, HttpTransportResponse, SendTestHttpResult } from '../../schemas/http-channel.ts';
import { newWebhookSecret } from '../../webhooks/signing.ts';
import { WEBHOOK_URL_REFUSED } from '../../webhooks/endpoints.ts';
import { defaultHttpBody } from './payload.ts';
import { postSigned } from './send.ts';
import {
  decryptHeaders,
  decryptSecret,
  deleteHttpTransportRow,
  encryptHeaders,
  encryptSecret,
  findHttpTransportRow,
  insertHttpTransportRow,
  loadHttpTransport,
  lockHttpTransportRow,
  rotateHttpTransportSecret,
  updateHttpTransportRow,
  type HttpTransportRow,
} from './transport-store.ts';

export const HTTPS_REQUIRED = `must be an https URL ${allowsPrivate('allowPrivateWebhookUrls')}`;

const notConfigured = () => new AppError('not_found', 'This tenant has no http transport');

function toResponse(runtime: Context, tenantId: string, row: HttpTransportRow, secret?: string): HttpTransportResponse {
  const headers = decryptHeaders(runtime, tenantId, row);
  const unreadable = headers === 'unreadable' || decryptSecret(runtime, tenantId, row) === 'unreadable';
  return {
    url: row.url,
    header_names: headers === 'unreadable' ? [] : Object.keys(headers).sort(),
    include_secret_variables: row.include_secret_variables,
    credentials_unreadable: unreadable,
    ...(secret ? { secret } : {}),
    created_at: toIsoTimestamp(row.created_at),
    updated_at: toIsoTimestamp(row.updated_at),
  };
}

async function checkUrl(runtime: Context, url: string): Promise<void> {
  const target = new URL(url);
  if (runtime.config.allowPrivateWebhookUrls) return;
  if (target.protocol !== 'https:') throw invalidField(['body', 'url'], HTTPS_REQUIRED);
  const refusal = await hostRefusal(target.hostname, { dnsServers: runtime.config.dnsServers }, WEBHOOK_URL_REFUSED);
  if (refusal) throw invalidField(['body', 'url'], refusal);
}

/**
 * The headers to store, as a ciphertext. Omitted headers keep the stored ones, but not to another
 * origin: they often carry a credential, which a new URL's owner would otherwise receive unasked.
 */
function headersCiphertext(
  runtime: Context,
  tenantId: string,
  input: HttpTransportRequest,
  current: HttpTransportRow | null,
): string | null {
  if (input.headers !== undefined) return encryptHeaders(runtime, tenantId, input.headers);
  if (!current?.headers_ciphertext) return null;
  if (new URL(current.url).origin !== new URL(input.url).origin)
    throw invalidField(
      ['body', 'headers'],
      'give the headers again (or {} for none) when the URL moves to another origin: the stored ones are not sent to a new one unasked',
    );
  return current.headers_ciphertext;
}

/**
 * Creates or replaces the tenant's transport. The answer that creates it carries the signing secret,
 * shown this once; a replacement keeps the secret (rotate-secret replaces it), save one whose key is
 * gone from the key ring: that is replaced, and the new one shown.
 */
export async function putHttpTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  input: HttpTransportRequest,
): Promise<HttpTransportResponse> {
  await checkUrl(runtime, input.url);
  return em.transactional(async (tx) => {
    let current = await lockHttpTransportRow(tx, tenantId);
    if (!current) {
      const secret = newWebhookSecret();
      const created = await insertHttpTransportRow(tx, tenantId, {
        url: input.url,
        headersCiphertext: headersCiphertext(runtime, tenantId, input, null),
        secretCiphertext: encryptSecret(runtime, tenantId, secret),
        includeSecretVariables: input.include_secret_variables,
      });
      if (created) return toResponse(runtime, tenantId, created, secret);
      // Created by a concurrent request since: this one replaces it.
      current = (await lockHttpTransportRow(tx, tenantId))!;
    }
    const fresh = decryptSecret(runtime, tenantId, current) === 'unreadable' ? newWebhookSecret() : undefined;
    const row = await updateHttpTransportRow(tx, tenantId, {
      url: input.url,
      headersCiphertext: headersCiphertext(runtime, tenantId, input, current),
      includeSecretVariables: input.include_secret_variables,
      secretCiphertext: fresh ? encryptSecret(runtime, tenantId, fresh) : null,
    });
    return toResponse(runtime, tenantId, row, fresh);
  });
}

export async function getHttpTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
): Promise<HttpTransportResponse> {
  const row = await findHttpTransportRow(em, tenantId);
  if (!row) throw notConfigured();
  return toResponse(runtime, tenantId, row);
}

export async function deleteHttpTransport(em: EntityManager, tenantId: string): Promise<void> {
  await deleteHttpTransportRow(em, tenantId);
}

/** Replaces the signing secret at once; the answer carries the new one, shown this once. */
export async function rotateHttpSecret(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
): Promise<HttpTransportResponse & { secret: string }> {
  const secret = newWebhookSecret();
  const row = await rotateHttpTransportSecret(em, tenantId, encryptSecret(runtime, tenantId, secret));
  if (!row) throw notConfigured();
  return { ...toResponse(runtime, tenantId, row, secret), secret };
}

/** The body a test send carries: the default shape, with a sample contact and message. */
function sampleBody(eventId: string): string {
  return JSON.stringify(
    defaultHttpBody({
      eventId,
      type: 'herald.test',
      contact: {
        id: '00000000-0000-0000-0000-000000000000',
        external_id: 'herald_test',
        email: 'test@example.com',
        phone: '+15550100',
        name: 'Herald Test',
        language: 'en',
        timezone: 'UTC',
        properties: {},
      },
      variables: { herald_test: true },
      rendered: { title: 'Herald test', body: 'Your http transport works.', action_url: null },
    }),
  );
}

/** One signed POST with a sample body to the tenant's endpoint; reports its answer. */
export async function testHttpTransport(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
): Promise<SendTestHttpResult> {
  const transport = await loadHttpTransport(runtime, em, tenantId);
  if (!transport) throw notConfigured();
  if (transport.state === 'unreadable')
    return {
      ok: false,
      status: null,
      error:
        'credentials_unreadable: the headers or the signing secret were encrypted with a key that is no longer in the key ring; set them again',
    };
  const id = newId(runtime.clock.now());
  const answer = await postSigned(runtime, {
    url: transport.url,
    headers: transport.headers,
    secret: transport.secret,
    id,
    body: sampleBody(id),
  });
  if (answer.status === 'sent')
    return {
      ok: true,
      status: answer.httpStatus,
      ...(answer.providerMessageId ? { message_id: answer.providerMessageId } : {}),
    };
  return { ok: false, status: answer.httpStatus, error: answer.error };
}

// Requests to providers (APNs, FCM, Expo, web push services, SMS and chat providers) with a deadline, trusting the
// system CAs plus config.providers.caFile: over HTTP/2 to an https origin that offers it
// (provider-http2.ts), else over keep-alive HTTP/1.1. Per-runtime state (CA bundle, connections,
// cached provider tokens) lives here so a process with several runtimes (tests) keeps them apart.
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { Context } from '../base/context.ts';
import { NonPublicAddressError, assertPublicHost, publicOnlyLookup } from '../base/net/public-address.ts';
import { trustedCas } from '../base/net/trusted-cas.ts';
import {
  Http2Origins,
  http2Request,
  MAX_ANSWER_BYTES,
  type ProviderResponse,
  type RequestOptions,
} from './provider-http2.ts';

export type { ProviderResponse };

export interface ProviderState {
  /** Cached bearer tokens (APNs JWTs, FCM OAuth tokens) by credential fingerprint. */
  tokens: Map<string, { value: string; expiresAt: number }>;
  /** Token exchanges in flight (FCM), by the same key, so that concurrent sends share one. */
  exchanges: Map<string, Promise<string>>;
  /** HTTP/2 sessions, one per origin that offers h2. */
  http2: Http2Origins;
  /**
   * Keep-alive connections, at most SOCKETS_PER_ORIGIN per origin. The TLS context (with the CA
   * bundle) is built once, for these and the HTTP/2 sessions: built per connection, the bundle's
   * parsing costs milliseconds each. Requests that must reach only public addresses have agents of
   * their own: an agent reuses a connection by host and port alone, so one opened without the check
   * (to a provider origin the install configured) would otherwise serve a browser's endpoint that
   * names the same host.
   */
  agents: Record<'any' | 'publicOnly', Agents>;
}

interface Agents {
  http: HttpAgent;
  https: HttpsAgent;
}

/**
 * Connections per provider origin: enough for a worker's sends in flight to keep a provider busy,
 * bounded so a burst does not open hundreds of TLS connections (each a handshake) to one origin.
 */
const SOCKETS_PER_ORIGIN = 32;

const states = new WeakMap<Context, ProviderState>();

export function providerState(runtime: Context): ProviderState {
  let state = states.get(runtime);
  if (!state) {
    const ca = trustedCas(runtime.config);
    const secureContext = ca ? createSecureContext({ ca }) : undefined;
    const created: ProviderState = {
      tokens: new Map(),
      exchanges: new Map(),
      http2: new Http2Origins(secureContext),
      agents: { any: agentsWith(secureContext), publicOnly: agentsWith(secureContext) },
    };
    state = created;
    states.set(runtime, created);
    runtime.cleanups.push(async () => {
      created.http2.close();
      for (const agents of Object.values(created.agents)) {
        agents.http.destroy();
        agents.https.destroy();
      }
    });
  }
  return state;
}

function agentsWith(secureContext: SecureContext | undefined): Agents {
  return {
    http: new HttpAgent({ keepAlive: true, maxSockets: SOCKETS_PER_ORIGIN }),
    https: new HttpsAgent({
      keepAlive: true,
      maxSockets: SOCKETS_PER_ORIGIN,
      ...(secureContext ? { secureContext } : {}),
    }),
  };
}

/** A transport-level failure (DNS, refused, reset, timeout): always worth retrying. */
export class ProviderUnreachableError extends Error {
  override name = 'ProviderUnreachableError';
}

export async function providerRequest(
  runtime: Context,
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    timeoutMs?: number;
    /** Refuse to connect to non-public addresses (for destinations a tenant or browser chose). */
    publicOnly?: boolean;
  },
): Promise<ProviderResponse> {
  const target = new URL(url);
  if (target.protocol !== 'https:' && target.protocol !== 'http:')
    throw new ProviderUnreachableError(`unsupported URL scheme ${target.protocol}`);
  if (options.publicOnly) assertPublicHost(target);
  const request: RequestOptions = {
    method: options.method ?? 'POST',
    headers: options.headers,
    body: options.body,
    timeoutMs: options.timeoutMs ?? 15_000,
  };
  try {
    const session =
      target.protocol === 'https:'
        ? await providerState(runtime).http2.session(target, options.publicOnly ?? false, request.timeoutMs)
        : null;
    return await (session
      ? http2Request(session, target, request)
      : http1Request(runtime, target, request, options.publicOnly ?? false));
  } catch (error) {
    if (error instanceof NonPublicAddressError) throw error;
    throw new ProviderUnreachableError(`${target.origin}: ${(error as Error).message}`);
  }
}

function http1Request(
  runtime: Context,
  target: URL,
  options: RequestOptions,
  publicOnly: boolean,
): Promise<ProviderResponse> {
  const agents = providerState(runtime).agents[publicOnly ? 'publicOnly' : 'any'];
  const https = target.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      target,
      {
        method: options.method,
        headers: options.headers,
        agent: https ? agents.https : agents.http,
        ...(publicOnly ? { lookup: publicOnlyLookup as never } : {}),
        timeout: options.timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_ANSWER_BYTES) chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(options.body);
  });
}

/**
 * A provider's error answer as delivery records keep it: the HTTP status and the provider's error
 * codes, never the body itself (bodies can echo device tokens or endpoints, and are not ours to store).
 */
export function describeAnswer(response: ProviderResponse): string {
  const codes = providerCodes(response.text);
  return `HTTP ${response.status}${codes.length > 0 ? ` ${codes.join(' ')}` : ''}`;
}

/** The value when it passes for an error code (a short identifier, never free text), else null. */
export function errorCode(value: unknown): string | null {
  return typeof value === 'string' && /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/.test(value) ? value : null;
}

/** A provider's answer body as JSON, or undefined when it is not JSON (an HTML error page, plain text). */
export function answerJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A provider's answer body when it is a JSON object, else null. */
export function answerObject(text: string): Record<string, unknown> | null {
  const value = answerJson(text);
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/**
 * The error codes in a provider's JSON answer: APNs `reason`; FCM `error.status` and each detail's
 * `errorCode`; Expo `errors[].code`; OAuth and web push services' `error` (and autopush's `errno`).
 */
export function providerCodes(text: string): string[] {
  const body = answerJson(text);
  if (!body || typeof body !== 'object') return [];
  const b = body as { reason?: unknown; error?: unknown; errors?: unknown; errno?: unknown };
  const found: unknown[] = [b.reason];
  if (b.error && typeof b.error === 'object') {
    const e = b.error as { status?: unknown; details?: unknown };
    found.push(
      e.status,
      ...(Array.isArray(e.details) ? e.details.map((d) => (d as { errorCode?: unknown } | null)?.errorCode) : []),
    );
  } else found.push(b.error);
  if (Array.isArray(b.errors)) found.push(...b.errors.map((e) => (e as { code?: unknown } | null)?.code));
  if (typeof b.errno === 'number') found.push(`errno-${b.errno}`);
  return [...new Set(found.map(errorCode).filter((c) => c !== null))];
}

// HTTP/1.1 requests to push providers (FCM, Expo, web push services) with a deadline, trusting the
// system CAs plus config.providers.caFile. Per-runtime state (CA bundle, HTTP/2 sessions, cached
// provider tokens) lives here so a process with several runtimes (tests) keeps them apart.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Runtime } from '../../runtime.ts';
import { NonPublicAddressError, assertPublicHost, publicOnlyLookup } from '../../net/public-address.ts';
import { trustedCas } from '../../net/trusted-cas.ts';

export interface ProviderState {
  ca: string[] | undefined;
  /** Cached bearer tokens (APNs JWTs, FCM OAuth tokens) by credential fingerprint. */
  tokens: Map<string, { value: string; expiresAt: number }>;
  /** Long-lived resources (HTTP/2 sessions) closed when the runtime stops. */
  closers: Map<string, () => void>;
}

const states = new WeakMap<Runtime, ProviderState>();

export function providerState(runtime: Runtime): ProviderState {
  let state = states.get(runtime);
  if (!state) {
    const created: ProviderState = {
      ca: trustedCas(runtime.config),
      tokens: new Map(),
      closers: new Map(),
    };
    state = created;
    states.set(runtime, created);
    runtime.cleanups.push(async () => {
      for (const close of created.closers.values()) close();
      created.closers.clear();
    });
  }
  return state;
}

export interface ProviderResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A transport-level failure (DNS, refused, reset, timeout): always worth retrying. */
export class ProviderUnreachableError extends Error {
  override name = 'ProviderUnreachableError';
}

export function providerRequest(
  runtime: Runtime,
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
  const send = target.protocol === 'https:' ? httpsRequest : target.protocol === 'http:' ? httpRequest : null;
  if (!send) return Promise.reject(new ProviderUnreachableError(`unsupported URL scheme ${target.protocol}`));
  if (options.publicOnly) {
    try {
      assertPublicHost(target);
    } catch (error) {
      return Promise.reject(error);
    }
  }
  const { ca } = providerState(runtime);
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: options.method ?? 'POST',
        headers: options.headers,
        ...(target.protocol === 'https:' && ca ? { ca } : {}),
        ...(options.publicOnly ? { lookup: publicOnlyLookup as never } : {}),
        timeout: options.timeoutMs ?? 15_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          // Provider answers are small; never buffer an unbounded body from a hostile endpoint.
          if (size <= 64 * 1024) chunks.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (error) => reject(new ProviderUnreachableError(error.message)));
      },
    );
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', (error) => reject(error instanceof NonPublicAddressError ? error : new ProviderUnreachableError(`${target.origin}: ${error.message}`)));
    req.end(options.body);
  });
}

/** A short, secret-free description of a provider's error answer for delivery records. */
export function describeAnswer(response: ProviderResponse): string {
  return `HTTP ${response.status}${response.text ? `: ${response.text.slice(0, 300)}` : ''}`;
}

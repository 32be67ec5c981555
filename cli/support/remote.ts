// Remote mode: commands that talk to a running Herald over its HTTP API with a service key, from
// --url/--api-key or HERALD_URL/HERALD_API_KEY. API errors become one-line CliErrors: 422 (the input
// was refused) exits 2 like a usage error, everything else exits 1.
import type { Command } from 'commander';
import { CliError, EXIT_FAILURE, EXIT_USAGE, usageError } from './output.ts';

export interface RemoteOptions {
  url?: string;
  apiKey?: string;
}

export interface RemoteResponse<T> {
  status: number;
  headers: Headers;
  body: T;
}

/** Adds --url and --api-key to a remote command. */
export function withRemote(command: Command): Command {
  return command
    .option('--url <url>', 'Herald base URL (default: $HERALD_URL)')
    .option('--api-key <key>', 'service key, sk_... (default: $HERALD_API_KEY)');
}

export class RemoteClient {
  readonly baseUrl: string;
  readonly #apiKey: string;

  constructor(baseUrl: string, apiKey: string) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.#apiKey = apiKey;
  }

  /** Sends a request; answers any status (callers decide), throws only when Herald cannot be reached. */
  async send<T = any>(method: string, path: string, body?: unknown): Promise<RemoteResponse<T>> {
    let response: Response;
    try {
      response = await fetch(this.baseUrl + path, {
        method,
        headers: { authorization: `Bearer ${this.#apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      throw new CliError(`cannot reach Herald at ${this.baseUrl}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`);
    }
    const text = await response.text();
    let parsed: unknown = text;
    if (text && (response.headers.get('content-type') ?? '').includes('json')) {
      try {
        parsed = JSON.parse(text);
      } catch {
        // leave the text as is
      }
    }
    return { status: response.status, headers: response.headers, body: parsed as T };
  }

  /** Sends a request and throws a CliError for any non-2xx answer. */
  async call<T = any>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.send<T>(method, path, body);
    if (res.status >= 200 && res.status < 300) return res.body;
    throw apiError(res);
  }
}

export function apiError(res: RemoteResponse<unknown>): CliError {
  const body = res.body as { detail?: unknown } | string;
  let message = `HTTP ${res.status}`;
  if (typeof body === 'object' && body && 'detail' in body) {
    const detail = body.detail;
    message = Array.isArray(detail)
      ? detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join('.')}: ${d.msg}`).join('; ')
      : String(detail);
  }
  if (res.status === 401) message = `the service key was refused (${message}); check --api-key or HERALD_API_KEY`;
  if (res.status === 429) message = `rate limited; retry after ${res.headers.get('retry-after') ?? '?'} s`;
  return new CliError(message, res.status === 422 ? EXIT_USAGE : EXIT_FAILURE);
}

export function remoteClient(options: RemoteOptions, env: NodeJS.ProcessEnv = process.env): RemoteClient {
  const url = options.url ?? env.HERALD_URL;
  const apiKey = options.apiKey ?? env.HERALD_API_KEY;
  if (!url) throw usageError('no Herald URL: pass --url or set HERALD_URL');
  if (!/^https?:\/\//.test(url)) throw usageError('--url must be an http(s) URL');
  if (!apiKey) throw usageError('no service key: pass --api-key or set HERALD_API_KEY');
  if (!apiKey.startsWith('sk_')) throw usageError('the service key must begin with sk_');
  return new RemoteClient(url, apiKey);
}

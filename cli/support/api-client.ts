// Remote mode: commands that talk to a Herald server over its HTTP API with a service key, given by
// --url/--api-key or HERALD_URL/HERALD_API_KEY. API failures exit 1 with the server's message.
import type { Command } from 'commander';
import { CliError, EXIT_FAILURE, usageError } from './output.ts';

export interface RemoteOptions {
  url?: string;
  apiKey?: string;
}

/** Adds --url and --api-key to a remote command. */
export function withRemote(command: Command): Command {
  return command
    .option('--url <url>', 'Herald base URL (default: $HERALD_URL)')
    .option('--api-key <key>', 'service key, sk_... (default: $HERALD_API_KEY)');
}

export interface ApiResponse<T> {
  status: number;
  body: T;
}

export interface ApiClient {
  request<T = any>(method: string, path: string, options?: { body?: unknown; headers?: Record<string, string> }): Promise<ApiResponse<T>>;
}

export function apiClient(options: RemoteOptions, env: NodeJS.ProcessEnv = process.env): ApiClient {
  const base = (options.url ?? env.HERALD_URL ?? '').replace(/\/+$/, '');
  const key = options.apiKey ?? env.HERALD_API_KEY ?? '';
  if (!base) throw usageError('no server: pass --url or set HERALD_URL');
  if (!/^https?:\/\//.test(base)) throw usageError('--url must start with http:// or https://');
  if (!key) throw usageError('no service key: pass --api-key or set HERALD_API_KEY');
  return {
    async request(method, path, opts = {}) {
      let response: Response;
      try {
        response = await fetch(base + path, {
          method,
          headers: {
            authorization: `Bearer ${key}`,
            accept: 'application/json',
            ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
            ...opts.headers,
          },
          body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        });
      } catch (error) {
        throw new CliError(`cannot reach ${base}: ${(error as Error).message}`, EXIT_FAILURE);
      }
      const text = await response.text();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        // not JSON: keep the text
      }
      if (!response.ok) throw new CliError(`${response.status} ${describeError(body)}`, EXIT_FAILURE);
      return { status: response.status, body: body as never };
    },
  };
}

function describeError(body: unknown): string {
  if (body && typeof body === 'object' && 'detail' in body) {
    const detail = (body as { detail: unknown; code?: string }).detail;
    if (Array.isArray(detail)) return detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join('.')}: ${d.msg}`).join('; ');
    const code = (body as { code?: string }).code;
    return code ? `${code}: ${String(detail)}` : String(detail);
  }
  return typeof body === 'string' ? body.slice(0, 200) : 'request failed';
}

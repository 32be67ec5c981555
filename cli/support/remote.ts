// The one API client of the commands: remote mode talks to a running Herald over HTTP with a service
// key, from --url and --api-key/--api-key-file or HERALD_URL/HERALD_API_KEY; local mode hands the same
// requests to the routes in the CLI's own process (server/app/in-process-api.ts, loaded only then). A
// remote API error becomes a one-line ApiError "HTTP <status>: <detail>" (ErrorResponse detail and code,
// or the HTTPValidationError entries as "loc: msg"); a local one is the detail alone, as the services'
// own errors read. Either exits 1, whatever the status (output.ts: an error Herald answered). The
// service key is only ever sent in the Authorization header, never printed.
import { once } from 'node:events';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Command } from 'commander';
import { CliError, EXIT_FAILURE, usageError } from './output.ts';
import { readSecret } from './file-input.ts';

export interface RemoteOptions {
  url?: string;
  apiKey?: string;
  apiKeyFile?: string;
}

interface RemoteResponse<T> {
  status: number;
  headers: IncomingHttpHeaders;
  body: T;
}

export interface RemoteRequest {
  body?: unknown;
  headers?: Record<string, string>;
  /** On 429, wait for Retry-After and send again instead of failing (bulk imports). */
  waitWhenRateLimited?: boolean;
  /** A body sent as it is produced (an import file), instead of `body`; it cannot be sent twice. */
  stream?: { contentType: string; chunks: AsyncIterable<Uint8Array> };
}

/** A request gives up after this long: a hung server must not hang a CI script. */
const REQUEST_TIMEOUT_MS = 60_000;
/** A streamed upload (up to 100 MB) may take longer on a slow link. */
const STREAM_TIMEOUT_MS = 30 * 60_000;

/** Adds --url, --api-key and --api-key-file to a remote command. */
export function withRemote(command: Command): Command {
  return command
    .option('--url <url>', 'Herald base URL (default: $HERALD_URL)')
    .option(
      '--api-key <key>',
      'service key, sk_... (other users can see it in the process list: prefer $HERALD_API_KEY or --api-key-file)',
    )
    .option(
      '--api-key-file <file>',
      "read the service key from a file (a mounted secret), or '-' for stdin (default: $HERALD_API_KEY)",
    );
}

/**
 * An answer of the API other than 2xx: exit 1, whatever the status. The status, the ErrorResponse code
 * and the body's detail are kept for commands that read them (a 404 to skip) and for --json errors.
 */
export class ApiError extends CliError {
  readonly status: number;
  constructor(message: string, status: number, body: unknown) {
    const { code, detail } = body && typeof body === 'object' ? (body as { code?: unknown; detail?: unknown }) : {};
    super(message, EXIT_FAILURE, {
      status,
      ...(typeof code === 'string' ? { code } : {}),
      ...(detail === undefined ? {} : { detail }),
    });
    this.status = status;
  }
}

/** The routes in this process: a request answered as the HTTP server would, as the host operator. */
export type InProcessFetch = (request: Request) => Promise<Response>;

/** Where the client sends: a Herald over HTTP with a service key, or the routes in this process. */
export type ClientTarget = { baseUrl: string; apiKey: string } | { fetch: InProcessFetch };

/** The base of in-process requests' URLs (server/app/in-process-api.ts's IN_PROCESS_ORIGIN). */
const IN_PROCESS_BASE = 'http://herald.in-process';

export class RemoteClient {
  readonly baseUrl: string;
  readonly #apiKey: string | null;
  readonly #fetch: InProcessFetch | null;

  constructor(target: ClientTarget) {
    const local = 'fetch' in target;
    this.baseUrl = local ? IN_PROCESS_BASE : target.baseUrl.replace(/\/+$/, '');
    this.#apiKey = local ? null : target.apiKey;
    this.#fetch = local ? target.fetch : null;
  }

  /** Sends a request and answers the body of a 2xx; throws a CliError for any other answer. */
  async call<T = any>(method: string, path: string, request: RemoteRequest = {}): Promise<T> {
    for (;;) {
      const res = await this.#send<T>(method, path, request);
      if (res.status >= 200 && res.status < 300) return res.body;
      if (res.status === 429 && request.waitWhenRateLimited && !request.stream) {
        const wait = Number(headerOf(res.headers, 'retry-after') ?? '1');
        await new Promise((resolve) => setTimeout(resolve, Math.max(1, wait) * 1000));
        continue;
      }
      throw this.#error(res);
    }
  }

  /** Sends a request; answers any status, throws only when Herald cannot be reached. */
  async #send<T>(method: string, path: string, request: RemoteRequest): Promise<RemoteResponse<T>> {
    const { body, headers, stream } = request;
    const contentType = stream ? stream.contentType : body === undefined ? undefined : 'application/json';
    const payload = body === undefined || stream ? undefined : Buffer.from(JSON.stringify(body));
    const timeoutMs = stream ? STREAM_TIMEOUT_MS : REQUEST_TIMEOUT_MS;
    let answer: { status: number; headers: IncomingHttpHeaders; text: string };
    const common = { accept: 'application/json', ...(contentType ? { 'content-type': contentType } : {}), ...headers };
    if (this.#fetch) {
      answer = await inProcessExchange(
        this.#fetch,
        new URL(this.baseUrl + path),
        method,
        common,
        payload,
        stream?.chunks,
      );
    } else {
      try {
        answer = await exchange(new URL(this.baseUrl + path), timeoutMs, {
          method,
          headers: {
            authorization: `Bearer ${this.#apiKey}`,
            ...common,
            ...(payload ? { 'content-length': String(payload.length) } : {}),
          },
          payload,
          chunks: stream?.chunks,
        });
      } catch (error) {
        throw new CliError(`cannot reach Herald at ${this.baseUrl}: ${(error as Error).message}`);
      }
    }
    let parsed: unknown = answer.text;
    if (answer.text && String(answer.headers['content-type'] ?? '').includes('json')) {
      try {
        parsed = JSON.parse(answer.text);
      } catch {
        // leave the text as is
      }
    }
    return { status: answer.status, headers: answer.headers, body: parsed as T };
  }

  #error(res: RemoteResponse<unknown>): ApiError {
    // Locally the routes are the host's own: their error reads as the services' errors always did.
    if (this.#fetch) return new ApiError(describeBody(res.body, false), res.status, res.body);
    let message = describeBody(res.body);
    if (res.status === 401) message = `the service key was refused (${message}); check --api-key or HERALD_API_KEY`;
    if (res.status === 429) message = `rate limited; retry after ${headerOf(res.headers, 'retry-after') ?? '?'} s`;
    return new ApiError(`HTTP ${res.status}: ${message}`, res.status, res.body);
  }
}

/** The message of an error body: HTTPValidationError entries, an ErrorResponse, or the start of a text. */
function describeBody(body: unknown, withCode = true): string {
  if (body && typeof body === 'object' && 'detail' in body) {
    const { detail, code } = body as { detail: unknown; code?: unknown };
    if (Array.isArray(detail))
      return detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join('.')}: ${d.msg}`).join('; ');
    return withCode && typeof code === 'string' ? `${String(detail)} (${code})` : String(detail);
  }
  return typeof body === 'string' && body ? body.slice(0, 200) : 'request failed';
}

/** The client for --url and --api-key/--api-key-file or HERALD_URL/HERALD_API_KEY; a missing or malformed one is a usage error. */
export function remoteClient(options: RemoteOptions): RemoteClient {
  const url = options.url ?? process.env.HERALD_URL;
  if (!url) throw usageError('no Herald URL: pass --url or set HERALD_URL');
  if (!/^https?:\/\//.test(url)) throw usageError('--url must be an http(s) URL');
  // Every path (paths.ts) begins with /v1: a URL copied from an API call would become /v1/v1/...
  const base = url.replace(/\/+$/, '');
  if (/\/v1$/.test(base)) throw usageError(`--url is Herald's base URL, without /v1: try ${base.slice(0, -3)}`);
  if (options.apiKey && options.apiKeyFile) throw usageError('give --api-key or --api-key-file, not both');
  const apiKey =
    options.apiKey ??
    (options.apiKeyFile ? readSecret(options.apiKeyFile, '--api-key-file') : process.env.HERALD_API_KEY);
  if (!apiKey) throw usageError('no service key: pass --api-key-file or --api-key, or set HERALD_API_KEY');
  if (!apiKey.startsWith('sk_')) throw usageError('the service key must begin with sk_');
  return new RemoteClient({ baseUrl: url, apiKey });
}

const headerOf = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** One exchange with the routes in this process (fetch's Request and Response: local mode loads them anyway). */
async function inProcessExchange(
  fetch: InProcessFetch,
  url: URL,
  method: string,
  headers: Record<string, string>,
  payload: Buffer | undefined,
  chunks: AsyncIterable<Uint8Array> | undefined,
): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  const { Readable } = process.getBuiltinModule('node:stream');
  const body = chunks ? (Readable.toWeb(Readable.from(chunks)) as ReadableStream<Uint8Array>) : payload;
  const response = await fetch(
    new Request(url, { method, headers, body, ...(chunks ? { duplex: 'half' } : {}) } as RequestInit),
  );
  return { status: response.status, headers: Object.fromEntries(response.headers), text: await response.text() };
}

interface Outgoing {
  method: string;
  headers: OutgoingHttpHeaders;
  payload?: Buffer;
  /** Written as they come (chunked transfer encoding), waiting for the socket to drain. */
  chunks?: AsyncIterable<Uint8Array>;
}

/**
 * One HTTP exchange over node:http(s), not fetch(): loading fetch's implementation (undici) costs a
 * short command such as `herald send` more CPU than the rest of its start-up. The modules come from
 * process.getBuiltinModule because an `import` of node:http builds its ESM namespace, which reads
 * http's lazy WebSocket exports and so loads undici all the same.
 */
function exchange(
  url: URL,
  timeoutMs: number,
  outgoing: Outgoing,
): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const send =
      url.protocol === 'https:'
        ? process.getBuiltinModule('node:https').request
        : process.getBuiltinModule('node:http').request;
    const req = send(url, { method: outgoing.method, headers: outgoing.headers });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    const fail = (error: Error) => {
      clearTimeout(timer);
      reject(error);
    };
    req.on('error', fail);
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('error', fail);
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString('utf8') });
      });
    });
    if (!outgoing.chunks) {
      req.end(outgoing.payload);
      return;
    }
    void (async () => {
      try {
        for await (const chunk of outgoing.chunks!) {
          if (!req.write(chunk)) await once(req, 'drain');
        }
        req.end();
      } catch (error) {
        req.destroy(error as Error);
      }
    })();
  });
}

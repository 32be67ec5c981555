// What every provider peer shares: a node:http server on 127.0.0.1 at a random port, a log of every raw
// request, faults answered instead of the provider's own reply, answers held back on demand, and an
// outage (down/up) that refuses connections and then listens again on the same port, so a test sees a
// provider fail the way a real one does without changing the URL Herald was given.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trackConnections } from '../connections.ts';

export interface RawRequest {
  method: string;
  /** The path with its query string, as the client sent it. */
  path: string;
  /** Lower-case header names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
  at: number;
}

/** A reply: an object or array body is sent as JSON, a string as it is. */
export interface Reply {
  status: number;
  body?: string | object;
  headers?: Record<string, string>;
}

/** A fault answers one request instead of the provider; a function builds it from the request. */
export type Fault = Reply | ((request: RawRequest) => Reply);

export interface PeerControls {
  /** Base URL, e.g. http://127.0.0.1:PORT (no trailing slash). */
  url: string;
  port: number;
  /** Every request that reached the peer, faulted or not. */
  requests: RawRequest[];
  /** Answers the next `count` requests with `fault` instead of the provider's reply. */
  failNext(count: number, fault: Fault): void;
  /** Holds every answer (requests are still logged) until resumeAnswers. */
  pauseAnswers(): void;
  /** Answers the held requests, in order, and answers at once again. */
  resumeAnswers(): void;
  /** Stops accepting: closes the listener and destroys open sockets, so connections are refused. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export type Handler = (request: RawRequest) => Reply | Promise<Reply>;

/** Starts a server that answers with `handler`, behind the shared fault and outage controls. */
export async function startPeerServer(handler: Handler): Promise<PeerControls> {
  const faults: Fault[] = [];
  const held: Array<() => void> = [];
  let paused = false;
  let listening = false;

  const answer = async (request: RawRequest, res: ServerResponse) => {
    const fault = faults.shift();
    let reply: Reply;
    try {
      reply = fault ? (typeof fault === 'function' ? fault(request) : fault) : await handler(request);
    } catch (error) {
      // A peer's own bug shows as a 500 naming it rather than as a hung request.
      reply = { status: 500, body: `peer error: ${(error as Error).message}` };
    }
    send(res, reply);
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request: RawRequest = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: flattenHeaders(req),
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      controls.requests.push(request);
      if (paused) held.push(() => void answer(request, res));
      else void answer(request, res);
    });
  });
  const connections = trackConnections(server);

  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        listening = true;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!listening) return resolve();
      listening = false;
      held.length = 0;
      server.close(() => resolve());
      connections.destroyAll();
    });

  await listen(0);
  const port = (server.address() as AddressInfo).port;
  const controls: PeerControls = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests: [],
    failNext(count, fault) {
      for (let i = 0; i < count; i++) faults.push(fault);
    },
    pauseAnswers() {
      paused = true;
    },
    resumeAnswers() {
      paused = false;
      for (const release of held.splice(0)) release();
    },
    down: stop,
    up: () => (listening ? Promise.resolve() : listen(port)),
    close: stop,
  };
  return controls;
}

function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function send(res: ServerResponse, reply: Reply): void {
  const headers = { ...reply.headers };
  let body = '';
  if (typeof reply.body === 'string') {
    body = reply.body;
    if (!hasHeader(headers, 'content-type')) headers['content-type'] = 'text/plain; charset=utf-8';
  } else if (reply.body !== undefined) {
    body = JSON.stringify(reply.body);
    if (!hasHeader(headers, 'content-type')) headers['content-type'] = 'application/json; charset=utf-8';
  }
  res.writeHead(reply.status, headers);
  res.end(reply.status === 204 || reply.status === 304 ? undefined : body);
}

function hasHeader(headers: Record<string, string>, name: string): boolean {
  return Object.keys(headers).some((h) => h.toLowerCase() === name);
}

/** The path without its query string. */
export function pathOf(request: RawRequest): string {
  return new URL(request.path, 'http://peer').pathname;
}

/** The query string parameters of a request. */
export function queryOf(request: RawRequest): URLSearchParams {
  return new URL(request.path, 'http://peer').searchParams;
}

/** The body parsed as JSON, or undefined when it is not JSON. */
export function parseJson(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

/** An application/x-www-form-urlencoded body as name -> value (the last value of a repeated name). */
export function parseForm(body: string): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(body));
}

/** True when the request says its body is JSON. */
export function isJson(request: RawRequest): boolean {
  return (request.headers['content-type'] ?? '').toLowerCase().includes('application/json');
}

/** True when the request says its body is a form. */
export function isForm(request: RawRequest): boolean {
  return (request.headers['content-type'] ?? '').toLowerCase().includes('application/x-www-form-urlencoded');
}

/** A plain object, or undefined for anything else (arrays, strings, null). */
export function asObject(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** POSTs a form body, as providers deliver their callbacks. */
export function postForm(url: string, params: Record<string, string>, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(params).toString(),
  });
}

/** POSTs a JSON body. */
export function postJson(url: string, value: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(value),
  });
}

/** Random lower-case hex of `length` characters. */
export function randomHex(length: number): string {
  let out = '';
  while (out.length < length) out += Math.floor(Math.random() * 16).toString(16);
  return out;
}

/** Random characters from `alphabet`. */
export function randomFrom(alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(Math.random() * alphabet.length)];
  return out;
}

export const E164 = /^\+[1-9]\d{6,14}$/;

// GSM 03.38 basic set plus the extension table (which costs two septets each).
const GSM7_BASIC =
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\u001bÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' +
  '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà';
const GSM7_EXTENDED = '^{}\\[~]|€\f';

/** SMS parts of a text as carriers count them: GSM-7 160/153 septets, otherwise UCS-2 70/67 units. */
export function smsSegments(text: string): { encoding: 'gsm7' | 'ucs2'; segments: number } {
  let septets = 0;
  let gsm = true;
  for (const ch of text) {
    if (GSM7_BASIC.includes(ch)) septets += 1;
    else if (GSM7_EXTENDED.includes(ch)) septets += 2;
    else gsm = false;
  }
  if (gsm) return { encoding: 'gsm7', segments: septets <= 160 ? 1 : Math.ceil(septets / 153) };
  const units = text.length;
  return { encoding: 'ucs2', segments: units <= 70 ? 1 : Math.ceil(units / 67) };
}

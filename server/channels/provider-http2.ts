// HTTP/2 to push providers: one multiplexed session per https origin that offers h2 in its TLS
// handshake (ALPN), as APNs, FCM and the browsers' push services do. The sends of a batch then share
// one connection, and the requests written in the same tick leave in one write: over HTTP/1.1 each
// send is a write and a read of its own on one of many connections, which is most of a push's CPU.
// An origin that answers the handshake with HTTP/1.1 only is remembered for a while, and its
// requests go to the keep-alive HTTP/1.1 agent instead (provider-http.ts).
import { connect as http2Connect, constants, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import { connect as tlsConnect, type SecureContext, type TLSSocket } from 'node:tls';
import { publicOnlyLookup } from '../base/net/public-address.ts';

/** What a provider answered; its body read up to MAX_ANSWER_BYTES (either protocol). */
export interface ProviderResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** Provider answers are small; an unbounded body from a hostile endpoint is never buffered. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** A session nobody has used for this long is closed (a new one is a TLS handshake away). */
const IDLE_SESSION_MS = 60_000;
/** How long an origin that offered only HTTP/1.1 is not asked again. */
const HTTP1_ORIGIN_MS = 10 * 60_000;
/**
 * Sessions held at most. Web push origins come from browsers: past this, a new origin is served over
 * HTTP/1.1 rather than given one more long-lived connection.
 */
const MAX_SESSIONS = 256;
/** Origins remembered as HTTP/1.1-only at most; past it the memory starts over. */
const MAX_HTTP1_ORIGINS = 1000;

/** A request to a provider, either protocol. */
export interface RequestOptions {
  method: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs: number;
}

/** The HTTP/2 sessions of one runtime (one per origin, and per whether the origin's addresses are checked). */
export class Http2Origins {
  /** The TLS context with the trusted CAs; undefined: Node's default store. */
  readonly #secureContext: SecureContext | undefined;
  readonly #sessions = new Map<string, Promise<ClientHttp2Session | null>>();
  readonly #http1Until = new Map<string, number>();

  constructor(secureContext: SecureContext | undefined) {
    this.#secureContext = secureContext;
  }

  /**
   * The origin's session, connecting it on first use; null when the origin offers only HTTP/1.1.
   * Rejects as the connection fails (NonPublicAddressError when `publicOnly` and the name resolves
   * only to non-public addresses).
   */
  session(target: URL, publicOnly: boolean, timeoutMs: number): Promise<ClientHttp2Session | null> {
    const key = `${publicOnly ? 'public' : 'any'} ${target.origin}`;
    const until = this.#http1Until.get(key);
    if (until !== undefined) {
      if (until > Date.now()) return Promise.resolve(null);
      this.#http1Until.delete(key);
    }
    const existing = this.#sessions.get(key);
    if (existing) return existing;
    if (this.#sessions.size >= MAX_SESSIONS) return Promise.resolve(null);
    const connecting = this.#connect(key, target, publicOnly, timeoutMs);
    this.#sessions.set(key, connecting);
    connecting.then(
      (session) => {
        if (session) return;
        this.#forget(key, connecting);
        if (this.#http1Until.size >= MAX_HTTP1_ORIGINS) this.#http1Until.clear();
        this.#http1Until.set(key, Date.now() + HTTP1_ORIGIN_MS);
      },
      () => this.#forget(key, connecting),
    );
    return connecting;
  }

  close(): void {
    for (const connecting of this.#sessions.values())
      connecting.then(
        (session) => session?.destroy(),
        () => undefined,
      );
    this.#sessions.clear();
    this.#http1Until.clear();
  }

  #forget(key: string, connecting: Promise<ClientHttp2Session | null>): void {
    if (this.#sessions.get(key) === connecting) this.#sessions.delete(key);
  }

  async #connect(key: string, target: URL, publicOnly: boolean, timeoutMs: number): Promise<ClientHttp2Session | null> {
    const socket = await new Promise<TLSSocket>((resolve, reject) => {
      const host = target.hostname.replace(/^\[|\]$/g, '');
      const tls = tlsConnect({
        host,
        port: Number(target.port || 443),
        servername: /^[\d.]+$|:/.test(host) ? undefined : host,
        ALPNProtocols: ['h2', 'http/1.1'],
        ...(this.#secureContext ? { secureContext: this.#secureContext } : {}),
        ...(publicOnly ? { lookup: publicOnlyLookup as never } : {}),
      });
      tls.setTimeout(timeoutMs, () => tls.destroy(new Error('connection timed out')));
      tls.once('secureConnect', () => {
        tls.setTimeout(0);
        resolve(tls);
      });
      tls.once('error', reject);
    });
    if (socket.alpnProtocol !== 'h2') {
      socket.destroy();
      return null;
    }
    const session = http2Connect(target.origin, { createConnection: () => socket });
    const connecting = this.#sessions.get(key);
    session.on('error', () => undefined); // surfaced through its requests; a failed session is replaced
    // A session that closes or is told to go away takes no new requests; the next opens another.
    const retire = () => {
      if (connecting && this.#sessions.get(key) === connecting) this.#sessions.delete(key);
    };
    session.once('close', retire);
    session.once('goaway', retire);
    session.setTimeout(IDLE_SESSION_MS, () => session.close());
    // The server's settings come first on a new connection: until they arrive, a burst would open
    // more streams than the server may allow at once, and it would refuse the rest.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error('no HTTP/2 settings from the server in time')), timeoutMs);
      const fail = (error: Error) => {
        clearTimeout(timer);
        session.destroy();
        reject(error);
      };
      session.once('remoteSettings', () => {
        clearTimeout(timer);
        resolve();
      });
      session.once('close', () => fail(new Error('the connection closed before its HTTP/2 settings')));
    });
    // Idle sessions do not keep the process alive; a request in flight does (http2Request refs it).
    session.unref();
    return session;
  }
}

const inFlight = new WeakMap<ClientHttp2Session, number>();

/** A stream the server refused unprocessed (REFUSED_STREAM): it may be sent again (RFC 9113, section 8.7). */
const REFUSED_STREAM_RETRIES = 2;

/** One request on a session; rejects when the stream fails or times out (the caller tells it apart from an answer). */
export async function http2Request(
  session: ClientHttp2Session,
  target: URL,
  options: RequestOptions,
): Promise<ProviderResponse> {
  for (let retry = 0; ; retry++) {
    try {
      return await streamRequest(session, target, options);
    } catch (error) {
      if (
        !(error instanceof RefusedStreamError) ||
        retry >= REFUSED_STREAM_RETRIES ||
        session.closed ||
        session.destroyed
      )
        throw error;
    }
  }
}

class RefusedStreamError extends Error {}

function streamRequest(session: ClientHttp2Session, target: URL, options: RequestOptions): Promise<ProviderResponse> {
  return new Promise((resolve, reject) => {
    const count = inFlight.get(session) ?? 0;
    if (count === 0) session.ref();
    inFlight.set(session, count + 1);
    let settled = false;
    const settle = () => {
      if (settled) return false;
      settled = true;
      const left = (inFlight.get(session) ?? 1) - 1;
      inFlight.set(session, left);
      if (left === 0 && !session.destroyed) session.unref();
      return true;
    };
    let stream;
    try {
      stream = session.request({
        [constants.HTTP2_HEADER_METHOD]: options.method,
        [constants.HTTP2_HEADER_PATH]: `${target.pathname}${target.search}`,
        ...lowerCased(options.headers),
      });
    } catch (error) {
      settle();
      reject(error);
      return;
    }
    stream.setTimeout(options.timeoutMs, () => {
      if (settle()) reject(new Error('request timed out'));
      stream.close(constants.NGHTTP2_CANCEL);
    });
    let headers: IncomingHttpHeaders | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('response', (h) => (headers = h));
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_ANSWER_BYTES) chunks.push(chunk);
    });
    stream.on('end', () => {
      if (!settle()) return;
      if (!headers) return reject(new Error('the stream ended without a response'));
      const { [constants.HTTP2_HEADER_STATUS]: status, ...rest } = headers as IncomingHttpHeaders;
      resolve({ status: Number(status ?? 0), headers: rest, text: Buffer.concat(chunks).toString('utf8') });
    });
    stream.on('error', (error) => {
      if (settle())
        reject(
          stream.rstCode === constants.NGHTTP2_REFUSED_STREAM && !headers
            ? new RefusedStreamError(error.message)
            : error,
        );
    });
    stream.on('close', () => {
      if (settle()) reject(new Error('the stream closed without a response'));
    });
    stream.end(options.body);
  });
}

/** HTTP/2 header names are lower case. */
function lowerCased(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) out[name.toLowerCase()] = value;
  return out;
}

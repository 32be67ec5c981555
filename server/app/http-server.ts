// Serving the h3 app over HTTP with listhen, and closing it gracefully: end long-lived streams, stop
// accepting, let in-flight requests finish (their keep-alive connections closing after them), then cut
// whatever is left after the grace.
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { listen } from 'listhen';
import { toNodeHandler } from 'h3/node';
import type { Runtime } from './runtime.ts';
import { createApp } from '../api/app.ts';
import { trustedProxyMatcher } from '../base/net/trusted-proxies.ts';
import { routes } from '../api/routes/index.ts';

export interface HttpServer {
  url: string;
  port: number;
  /** Resolves true when connections still busy after `graceMs` had to be cut. */
  close(graceMs?: number): Promise<boolean>;
}

export async function startHttpServer(
  runtime: Runtime,
  options: { host?: string; port?: number } = {},
): Promise<HttpServer> {
  const app = createApp(runtime, routes);
  const host = options.host ?? runtime.config.host;
  const requested = options.port ?? runtime.config.port;
  const inUse = () =>
    new Error(
      `port ${requested} on ${host} is already in use: another Herald may be running there (herald status shows it); stop it, or start this one with --port`,
    );
  const listener = await listen(toNodeHandler(app), {
    hostname: host,
    port:
      requested === 0
        ? { port: 0, random: true }
        : { port: requested, ports: [], portRange: [], alternativePortRange: [] },
    showURL: false,
    open: false,
    qr: false,
    tunnel: false,
    public: host !== '127.0.0.1' && host !== 'localhost' && host !== '::1',
    autoClose: false,
    isProd: true,
  } as Parameters<typeof listen>[1]).catch((error: unknown) => {
    // listhen reports a taken port as finding no free one among the (single) port it may use.
    throw /available port/i.test((error as Error).message) ? inUse() : error;
  });
  const server = listener.server as Server;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : requested;
  if (requested !== 0 && port !== requested) {
    await listener.close();
    throw inUse();
  }
  server.keepAliveTimeout = 5000;
  // Seconds, not Node's minutes: a client that trickles its headers or its request holds a connection.
  // JSON bodies have their own, shorter deadline (api/body.ts); the whole request, a contact import's
  // upload included, gets two minutes.
  server.headersTimeout = runtime.config.headersTimeoutMs;
  server.requestTimeout = Math.max(REQUEST_TIMEOUT_MS, runtime.config.headersTimeoutMs);
  capConnectionsPerClient(server, runtime.config.maxConnectionsPerClient, runtime.config.trustedProxies);
  // Once closing, every response ends its connection: a keep-alive client that goes on sending requests
  // would otherwise hold its connection, and the close, until the grace ran out.
  let closing = false;
  server.prependListener('request', (_request, response: ServerResponse) => {
    if (closing) response.setHeader('connection', 'close');
  });
  const displayHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${displayHost}:${port}`,
    port,
    async close(graceMs = 10_000) {
      // End real-time streams first: their clients reconnect elsewhere (Last-Event-ID) instead of holding the drain.
      runtime.streamHub?.closeStreams();
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      let cut = false;
      const timer = setTimeout(() => {
        cut = true;
        server.closeAllConnections();
      }, graceMs);
      await closed;
      clearTimeout(timer);
      return cut;
    },
  };
}

const REQUEST_TIMEOUT_MS = 120_000;

const TOO_MANY_BODY = JSON.stringify({
  detail: 'Too many open connections from this address; retry later',
  code: 'rate_limited',
});
/** Written on the raw socket: the connection is refused before any request on it is parsed. */
const TOO_MANY_CONNECTIONS =
  'HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nConnection: close\r\nContent-Type: application/json\r\n' +
  `Content-Length: ${Buffer.byteLength(TOO_MANY_BODY)}\r\n\r\n${TOO_MANY_BODY}`;

/** Answers a connection past `max` open ones from one address 429 and closes it; trusted proxies are not counted. */
function capConnectionsPerClient(server: Server, max: number, trustedProxies: string[]): void {
  if (max === 0) return;
  const open = new Map<string, number>();
  const exempt = trustedProxyMatcher(trustedProxies);
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (!address || exempt(address)) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      socket.end(TOO_MANY_CONNECTIONS);
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

// The push providers' HTTP client (server/channels/provider-http.ts, provider-http2.ts) against
// real local TLS servers: HTTP/2 to an origin that offers it, with its sends sharing one session;
// HTTP/1.1 to an origin that does not (remembered, not asked again per send); a stalled request's
// deadline; a session the server closes, replaced by the next send; and a server that allows only a
// few streams at once.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createSecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerHttp2Session,
} from 'node:http2';
import { promises as dns } from 'node:dns';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Runtime } from '../../server/app/runtime.ts';
import { loadConfig } from '../../server/base/config.ts';
import { isNonPublicAddress, NonPublicAddressError } from '../../server/base/net/public-address.ts';
import {
  answerJson,
  answerObject,
  providerCodes,
  providerRequest,
  ProviderUnreachableError,
} from '../../server/channels/provider-http.ts';
import { titleUnless, type SkipReason } from '../support/skip-reasons.ts';
import { testCertificate } from '../support/tls.ts';
import { runTempDir } from '../support/tmp.ts';
import { trackConnections } from '../support/connections.ts';

interface Origin {
  url: string;
  /** Connections accepted, and the HTTP version of each request. */
  readonly connections: number;
  versions: string[];
  /** Requests being answered now, and the most at once. */
  active: number;
  mostActive: number;
  /** Ends every HTTP/2 session the server has open (GOAWAY), as a provider does when it restarts. */
  closeSessions(): Promise<void>;
  close(): Promise<void>;
}

async function startOrigin(
  kind: 'h2' | 'http1',
  options: { maxConcurrentStreams?: number; answerAfterMs?: number } = {},
): Promise<Origin> {
  const { cert, key } = testCertificate();
  // Requests to /stall are never answered.
  const handle = (req: Http2ServerRequest | IncomingMessage, res: Http2ServerResponse | ServerResponse) => {
    origin.versions.push(req.httpVersion);
    if (req.url === '/stall') return;
    origin.mostActive = Math.max(origin.mostActive, ++origin.active);
    setTimeout(() => {
      origin.active--;
      (res as ServerResponse).writeHead(201, {
        'content-type': 'application/json',
        location: `/m/${origin.versions.length}`,
      });
      res.end(JSON.stringify({ ok: true }));
    }, options.answerAfterMs ?? 0);
  };
  const server =
    kind === 'h2'
      ? createSecureServer(
          { cert, key, allowHTTP1: true, settings: { maxConcurrentStreams: options.maxConcurrentStreams } },
          handle,
        )
      : createHttpsServer({ cert, key }, handle);
  const tracked = trackConnections(server);
  const origin: Origin = {
    url: '',
    get connections() {
      return tracked.accepted;
    },
    versions: [],
    active: 0,
    mostActive: 0,
    closeSessions: async () => undefined,
    close: async () => undefined,
  };
  const sessions = new Set<ServerHttp2Session>();
  server.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  origin.closeSessions = () =>
    Promise.all([...sessions].map((session) => new Promise<void>((resolve) => session.close(() => resolve())))).then(
      () => undefined,
    );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin.url = `https://localhost:${(server.address() as AddressInfo).port}`;
  origin.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      tracked.destroyAll();
    });
  return origin;
}

/** A runtime as the provider client uses it: the configuration (the test CA) and the cleanups that close its connections. */
function providerRuntime(): Runtime & { stop(): Promise<void> } {
  const config = loadConfig(
    { dataDir: runTempDir('herald-provider-http-'), providers: { caFile: testCertificate().caFile } } as never,
    {},
  );
  const runtime = { config, cleanups: [] as Array<() => Promise<void> | void> };
  return Object.assign(runtime as unknown as Runtime, {
    stop: async () => {
      for (const cleanup of runtime.cleanups) await cleanup();
    },
  });
}

// A name other than localhost (which is refused by name) that the system resolver answers with a
// non-public address: the machine's own, as /etc/hosts, nss-myhostname or a container runtime give it.
const own = hostname();
const ownAddress = await dns.lookup(own).then(
  (found) => found.address,
  () => null,
);
const noPrivateName: SkipReason =
  ownAddress && isNonPublicAddress(ownAddress) ? null : `${own} does not resolve to a non-public address here`;

let h2: Origin;
let http1: Origin;
let runtime: ReturnType<typeof providerRuntime>;

beforeAll(async () => {
  [h2, http1] = await Promise.all([startOrigin('h2'), startOrigin('http1')]);
});
afterAll(async () => {
  await Promise.all([h2?.close(), http1?.close()]);
});
afterEach(async () => {
  await runtime?.stop();
});

describe('providerRequest', () => {
  it('sends over HTTP/2 to an origin that offers it, every request of a burst on one connection', async () => {
    runtime = providerRuntime();
    const before = h2.connections;
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => providerRequest(runtime, `${h2.url}/send`, { body: '{}' })),
    );
    expect(
      answers.every((a) => a.status === 201 && a.text === '{"ok":true}' && typeof a.headers.location === 'string'),
    ).toBe(true);
    expect(h2.connections - before).toBe(1);
    expect(new Set(h2.versions.slice(-40))).toEqual(new Set(['2.0']));
  });

  it('falls back to keep-alive HTTP/1.1 for an origin that offers only that, and remembers it', async () => {
    runtime = providerRuntime();
    const before = http1.connections;
    for (let i = 0; i < 5; i++)
      expect((await providerRequest(runtime, `${http1.url}/send`, { body: '{}' })).status).toBe(201);
    expect(new Set(http1.versions.slice(-5))).toEqual(new Set(['1.1']));
    // One connection that offered HTTP/2 and was answered HTTP/1.1, then one kept alive for the five.
    expect(http1.connections - before).toBe(2);
  });

  it('gives up on a request past its deadline, and the session serves the next one', async () => {
    runtime = providerRuntime();
    const stalled = providerRequest(runtime, `${h2.url}/stall`, { body: '{}', timeoutMs: 300 });
    await expect(stalled).rejects.toBeInstanceOf(ProviderUnreachableError);
    await expect(stalled).rejects.toThrow(/timed out/);
    const before = h2.connections;
    expect((await providerRequest(runtime, `${h2.url}/send`, { body: '{}' })).status).toBe(201);
    expect(h2.connections).toBe(before);
  });

  it('opens a new session after the server closed the one it had', async () => {
    runtime = providerRuntime();
    expect((await providerRequest(runtime, `${h2.url}/send`, { body: '{}' })).status).toBe(201);
    const before = h2.connections;
    await h2.closeSessions();
    expect((await providerRequest(runtime, `${h2.url}/send`, { body: '{}' })).status).toBe(201);
    expect(h2.connections - before).toBe(1);
  });

  it('holds requests beyond the streams the server allows at once until one ends, and loses none', async () => {
    runtime = providerRuntime();
    const narrow = await startOrigin('h2', { maxConcurrentStreams: 5, answerAfterMs: 20 });
    try {
      const answers = await Promise.all(
        Array.from({ length: 40 }, () => providerRequest(runtime, `${narrow.url}/send`, { body: '{}' })),
      );
      expect(answers.filter((a) => a.status === 201)).toHaveLength(40);
      expect(narrow.mostActive).toBe(5);
      expect(narrow.connections).toBe(1);
    } finally {
      await runtime.stop();
      await narrow.close();
    }
  });

  it('answers a connection refused as unreachable (retryable), never as an answer', async () => {
    runtime = providerRuntime();
    await expect(providerRequest(runtime, 'https://localhost:1/send', { body: '{}' })).rejects.toBeInstanceOf(
      ProviderUnreachableError,
    );
  });

  it.skipIf(noPrivateName)(
    titleUnless(
      noPrivateName,
      'never lets a public-only request ride a keep-alive connection opened without the check',
    ),
    async () => {
      runtime = providerRuntime();
      let requests = 0;
      const server = createHttpServer((_req, res) => {
        requests++;
        res.writeHead(201).end('{}');
      });
      await new Promise<void>((resolve) => server.listen(0, ownAddress!, resolve));
      try {
        const url = `http://${own}:${(server.address() as AddressInfo).port}/send`;
        // A provider origin the install configured (not checked), then a browser's endpoint naming the same host.
        expect((await providerRequest(runtime, url, { body: '{}' })).status).toBe(201);
        await expect(providerRequest(runtime, url, { body: '{}', publicOnly: true })).rejects.toBeInstanceOf(
          NonPublicAddressError,
        );
        expect(requests).toBe(1);
      } finally {
        await runtime.stop();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  );
});

describe('provider answers as JSON (the SMS and chat providers read theirs through these)', () => {
  it('reads JSON, and anything else (an HTML error page, plain text, nothing) as undefined', () => {
    expect(answerJson('{"sid":"SM1"}')).toEqual({ sid: 'SM1' });
    expect(answerJson('[{"id":"a"}]')).toEqual([{ id: 'a' }]);
    expect(answerJson('<html>502 Bad Gateway</html>')).toBeUndefined();
    expect(answerJson('')).toBeUndefined();
  });

  it('reads an object only as an object: arrays, scalars and null are null', () => {
    expect(answerObject('{"ok":true,"ts":"1.2"}')).toEqual({ ok: true, ts: '1.2' });
    for (const text of ['[1]', '"ok"', '42', 'null', 'no_service']) expect(answerObject(text)).toBeNull();
  });

  it('finds error codes in a JSON answer, and none in one that is not JSON', () => {
    expect(providerCodes('{"error":{"status":"UNREGISTERED"}}')).toEqual(['UNREGISTERED']);
    expect(providerCodes('no_service')).toEqual([]);
  });
});

// An independent web push service: the npm package web-push-testing (a push service that issues
// browser-like subscriptions, checks VAPID and decrypts payloads per RFC 8291 with http_ece), run in
// this process, behind a small TLS front so Herald talks https to it as it would to a real service.
import { createRequire } from 'node:module';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { createServer as createHttpsServer } from 'node:https';
import { request as httpRequest } from 'node:http';
import { testCertificate } from './tls.ts';

const require = createRequire(import.meta.url);

export interface TestSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
  clientHash: string;
}

export interface WebPushService {
  subscribe(applicationServerKey: string): Promise<TestSubscription>;
  /** Decrypted payloads the service received for a subscription. */
  messages(clientHash: string): Promise<string[]>;
  expire(clientHash: string): Promise<void>;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

export async function startWebPushService(): Promise<WebPushService> {
  const WebPushTestingServer = require('web-push-testing/src/server.js');
  const { PushApiModel } = require('web-push-testing/src/PushApiModel.js');
  const port = await freePort();
  const model = new PushApiModel();
  const service = new WebPushTestingServer(model, port);
  const log = console.log;
  console.log = () => undefined; // the package announces itself on stdout
  service.startServer();
  await new Promise<void>((resolve) =>
    service._server.listening ? resolve() : service._server.once('listening', resolve),
  );
  console.log = log;
  const backend = `http://localhost:${port}`;

  // TLS front: forwards every request to the service unchanged.
  const { cert, key } = testCertificate();
  const front = createHttpsServer({ cert, key }, (req, res) => {
    const upstream = httpRequest(`${backend}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  const frontUrl = `https://localhost:${(front.address() as AddressInfo).port}`;

  const call = async (path: string, body?: unknown) => {
    const res = await fetch(`${backend}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body ?? {}),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`web-push-testing ${path}: ${res.status} ${text}`);
    return text ? (JSON.parse(text) as { data: any }) : { data: null };
  };

  return {
    async subscribe(applicationServerKey) {
      const { data } = await call('/subscribe', { userVisibleOnly: 'true', applicationServerKey });
      return {
        endpoint: String(data.endpoint).replace(backend, frontUrl),
        keys: data.keys,
        clientHash: data.clientHash,
      };
    },
    async messages(clientHash) {
      const { data } = await call('/get-notifications', { clientHash });
      return data.messages as string[];
    },
    async expire(clientHash) {
      await fetch(`${backend}/expire-subscription/${clientHash}`, { method: 'POST' });
    },
    close: async () => {
      const frontClosed = new Promise<void>((resolve) => front.close(() => resolve()));
      front.closeAllConnections();
      await frontClosed;
      const backendClosed = new Promise<void>((resolve) => service._server.close(() => resolve()));
      service._server.closeAllConnections?.();
      await backendClosed;
    },
  };
}

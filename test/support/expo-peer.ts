// An HTTP server speaking the Expo push API (POST /--/api/v2/push/send): checks the access token when
// one is required, answers a ticket per message, DeviceNotRegistered for dead tokens.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export interface ExpoPeer {
  url: string;
  received: Array<{ to: string; title: string; body: string; data?: Record<string, unknown> }>;
  deadTokens: Set<string>;
  close(): Promise<void>;
}

export async function startExpoPeer(options: { accessToken?: string } = {}): Promise<ExpoPeer> {
  const peer: ExpoPeer = { url: '', received: [], deadTokens: new Set(), close: async () => undefined };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.method !== 'POST' || req.url !== '/--/api/v2/push/send')
        return json(404, { errors: [{ code: 'NOT_FOUND' }] });
      if (options.accessToken && req.headers.authorization !== `Bearer ${options.accessToken}`) {
        return json(401, { errors: [{ code: 'UNAUTHORIZED', message: 'insufficient permissions' }] });
      }
      const messages = JSON.parse(Buffer.concat(chunks).toString()) as ExpoPeer['received'];
      json(200, {
        data: messages.map((m) => {
          if (!/^ExponentPushToken\[.+\]$/.test(m.to))
            return {
              status: 'error',
              message: `"${m.to}" is not a valid Expo push token`,
              details: { error: 'DeviceNotRegistered' },
            };
          if (peer.deadTokens.has(m.to))
            return { status: 'error', message: 'not registered', details: { error: 'DeviceNotRegistered' } };
          peer.received.push(m);
          return { status: 'ok', id: randomUUID() };
        }),
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  peer.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  peer.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return peer;
}

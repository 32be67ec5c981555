// Clients that hold connections: a JSON or form body that trickles in is answered 408 after
// requestBodyTimeoutMs, not after Node's five minutes, and one address past maxConnectionsPerClient
// open connections is answered 429 and closed. On a real listening server, over raw sockets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';
import { eventually } from '../support/eventually.ts';

let app: TestApp;
let acme: TenantFixture;
const sockets: Socket[] = [];

beforeAll(async () => {
  app = await startTestApp({ config: { requestBodyTimeoutMs: 300, maxConnectionsPerClient: 3 } });
  acme = await createTenantFixture(app, 'Acme');
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await app?.close();
});

async function open(): Promise<{ socket: Socket; received: () => string; ended: Promise<unknown> }> {
  const { hostname, port } = new URL(app.url);
  const socket = connect(Number(port), hostname);
  sockets.push(socket);
  let text = '';
  socket.on('data', (chunk) => (text += chunk.toString('utf8')));
  socket.on('error', () => undefined);
  const ended = once(socket, 'close');
  await once(socket, 'connect');
  return { socket, received: () => text, ended };
}

describe('slow and greedy clients', () => {
  it('answers 408 request_timeout to a JSON body that does not arrive in time, and closes', async () => {
    const { socket, received, ended } = await open();
    socket.write(
      'POST /v1/notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Authorization: Bearer ${acme.serviceKey}\r\nContent-Length: 200\r\n\r\n{"type":`,
    );
    await ended;
    expect(received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(received()).toContain('"code":"request_timeout"');
  });

  it('answers 408 to a provider callback whose form body does not arrive in time, and closes', async () => {
    const transport = await app.request('PUT', '/v1/sms-transport/twilio', {
      token: acme.serviceKey,
      body: { account_sid: `AC${'0'.repeat(32)}`, auth_token: 'a'.repeat(32), from: '+15005550006' },
    });
    expect(transport.status, JSON.stringify(transport.body)).toBe(200);
    const { socket, received, ended } = await open();
    socket.write(
      `POST ${new URL(transport.body.callback_url).pathname} HTTP/1.1\r\nHost: x\r\n` +
        'Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 200\r\n\r\nMessageSid=SM',
    );
    await ended;
    expect(received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(received()).toContain('"code":"request_timeout"');
  });

  it('answers 429 to a connection past the cap from one address, and takes one again once another closes', async () => {
    const held = [await open(), await open(), await open()];
    const extra = await open();
    await extra.ended;
    expect(extra.received()).toMatch(/^HTTP\/1\.1 429 /);
    expect(extra.received()).toContain('Retry-After: 1');
    held[0]!.socket.destroy();
    await eventually(async () => (await fetch(`${app.url}/healthz`)).status === 200, { timeoutMs: 10_000 });
    for (const h of held) h.socket.destroy();
  });
});

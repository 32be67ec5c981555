// A real HTTP webhook receiver: keeps every request (path, headers, raw body) and answers as the test
// says (a status, a redirect, or no answer until released), so tests watch Herald's webhooks arrive
// the way a tenant's endpoint would.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trackConnections } from './connections.ts';

export interface ReceivedWebhook {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

export type Answer = number | { redirect: string } | 'hang';

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedWebhook[];
  /** How to answer the next requests (default 200). */
  answer: (request: ReceivedWebhook) => Answer;
  /** Answers every request held by 'hang' with 200. */
  release(): void;
  waitFor(predicate: (r: ReceivedWebhook) => boolean, timeoutMs?: number): Promise<ReceivedWebhook>;
  waitForCount(
    predicate: (r: ReceivedWebhook) => boolean,
    count: number,
    timeoutMs?: number,
  ): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const held: ServerResponse[] = [];
  const waiters: Array<() => void> = [];
  const receiver = {
    received: [] as ReceivedWebhook[],
    answer: (() => 200) as (request: ReceivedWebhook) => Answer,
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const request: ReceivedWebhook = {
        path: req.url ?? '/',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      receiver.received.push(request);
      for (const w of [...waiters]) w();
      const answer = receiver.answer(request);
      if (answer === 'hang') held.push(res);
      else if (typeof answer === 'number') res.writeHead(answer).end();
      else res.writeHead(302, { location: answer.redirect }).end();
    });
  });
  const connections = trackConnections(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const waitForCount = (predicate: (r: ReceivedWebhook) => boolean, count: number, timeoutMs = 15_000) =>
    new Promise<ReceivedWebhook[]>((resolve, reject) => {
      const check = () => {
        const found = receiver.received.filter(predicate);
        if (found.length < count) return false;
        clearTimeout(timer);
        waiters.splice(waiters.indexOf(check), 1);
        resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        waiters.splice(waiters.indexOf(check), 1);
        reject(
          new Error(
            `received ${receiver.received.filter(predicate).length} of ${count} matching webhooks within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      waiters.push(check);
      check();
    });
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}`,
    port,
    release() {
      for (const res of held.splice(0)) if (!res.writableEnded) res.writeHead(200).end();
    },
    waitForCount,
    waitFor: async (predicate: (r: ReceivedWebhook) => boolean, timeoutMs?: number) =>
      (await waitForCount(predicate, 1, timeoutMs))[0]!,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held.splice(0)) res.destroy();
        connections.destroyAll();
        server.close(() => resolve());
      }),
  });
}

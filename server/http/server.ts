// Serving the h3 app over node:http, and closing it gracefully: stop accepting, let in-flight
// requests finish, then cut long-lived streams.
import { createServer } from 'node:http';
import { toNodeHandler } from 'h3/node';
import type { Runtime } from '../runtime.ts';
import { createApp } from './app.ts';
import { routes } from '../routes/index.ts';

export interface HttpServer {
  url: string;
  port: number;
  close(graceMs?: number): Promise<void>;
}

export async function startHttpServer(runtime: Runtime, options: { host?: string; port?: number } = {}): Promise<HttpServer> {
  const app = createApp(runtime, routes);
  const host = options.host ?? runtime.config.host;
  const requested = options.port ?? runtime.config.port;
  const inUse = () => new Error(`port ${requested} on ${host} is already in use: another Herald may be running there (herald status shows it); stop it, or start this one with --port`);
  const server = createServer(toNodeHandler(app));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'EADDRINUSE' ? inUse() : error));
    server.listen(requested, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : requested;
  server.keepAliveTimeout = 5000;
  const displayHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${displayHost}:${port}`,
    port,
    async close(graceMs = 10_000) {
      // End real-time streams first: their clients reconnect elsewhere (Last-Event-ID) instead of holding the drain.
      runtime.streamHub?.closeStreams();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(timer);
    },
  };
}

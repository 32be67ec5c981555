// The separate metrics listener (config metricsListen, host:port): GET /metrics without credentials, for
// a scraper on a private interface, in every role (a worker-only process has no API port). Anything
// else answers 404.
import { createServer, type Server } from 'node:http';
import type { Runtime } from './runtime.ts';
import { scrapeMetrics } from '../resources/metrics.ts';

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/** Splits "host:port" or "[v6]:port". */
export function parseListenAddress(value: string): { host: string; port: number } {
  const cut = value.lastIndexOf(':');
  return { host: value.slice(0, cut).replace(/^\[(.*)\]$/, '$1'), port: Number(value.slice(cut + 1)) };
}

export async function startMetricsServer(runtime: Runtime, address: string): Promise<MetricsServer> {
  const { host, port } = parseListenAddress(address);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    scrapeMetrics(runtime).then(
      ({ body, contentType }) =>
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(body),
      (error: unknown) => {
        runtime.logger.error('metrics scrape failed', {
          error: error instanceof Error ? error.message : String(error),
        });
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('scrape failed\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address();
  const boundPort = typeof bound === 'object' && bound ? bound.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

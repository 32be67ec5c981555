// Starts Herald for one test file: its own database, data directory and key ring, the real HTTP
// server on a random loopback port, response bodies checked against their schemas, logs captured.
import { mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config, type ConfigInput } from '../../server/base/config.ts';
import { generateKey, writeKeyFile, type KeyFile } from '../../server/base/crypto/keyring.ts';
import { startRuntime, stopRuntime, type Runtime } from '../../server/app/runtime.ts';
import type { Role } from '../../server/base/context.ts';
import { startHttpServer, type HttpServer } from '../../server/app/http-server.ts';
import type { Clock } from '../../server/base/clock.ts';
import type { WebhookDispatchOptions } from '../../server/webhooks/dispatcher.ts';
import { TEST_DELIVERY_RETRY_SCHEDULE } from './delivery-retries.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { testCertificate } from './tls.ts';

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as-is (for malformed JSON tests). */
  rawBody?: string;
  token?: string;
  headers?: Record<string, string>;
}

export interface TestApp {
  url: string;
  config: Config;
  runtime: Runtime;
  database: TestDatabase;
  dataDir: string;
  /** Every log line written by the runtime (JSON strings). */
  logs: string[];
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<TestResponse<T>>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  config?: Partial<ConfigInput>;
  clock?: Clock;
  role?: Role;
  /** Reuse a database (e.g. a second process against the same data). */
  database?: TestDatabase;
  /** Do not start the HTTP server (worker-only processes). */
  http?: boolean;
  /** Listen on this port (default: any free one), e.g. one a publicUrl names before the start. */
  port?: number;
  /** Use <dataDir>/keys.json with these keys instead of HERALD_ENCRYPTION_KEYS (key rotation tests). */
  keyFile?: KeyFile;
  /** The webhook dispatcher's pacing and retry schedule (shortened by webhook tests). */
  webhooks?: WebhookDispatchOptions;
}

export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase());
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-test-'));
  chmodSync(dataDir, 0o711);
  if (options.keyFile) writeKeyFile(dataDir, options.keyFile);
  const config = loadConfig(
    {
      mode: 'multi',
      host: '127.0.0.1',
      port: 0,
      logLevel: 'debug',
      encryptionKeys: options.keyFile ? undefined : `test1:${generateKey()}`,
      // The test peers (web push service, APNs, FCM) listen on loopback.
      allowPrivatePushEndpoints: true,
      allowPrivateSmtpHosts: true,
      deliveryRetrySchedule: TEST_DELIVERY_RETRY_SCHEDULE,
      ...options.config,
      // The test peers' TLS certificate (support/tls.ts): SMTP peers' STARTTLS, the push peers' fronts.
      providers: { caFile: testCertificate().caFile, ...options.config?.providers },
      dataDir,
      databaseUrl: database.url,
    },
    {},
  );
  const logs: string[] = [];
  const runtime = await startRuntime(config, {
    role: options.role ?? 'all',
    clock: options.clock,
    validateResponses: true,
    logSink: (line) => logs.push(line),
    poolMax: 10,
    ...(options.webhooks ? { webhooks: options.webhooks } : {}),
  });
  let http: HttpServer | null = null;
  if (options.http !== false) http = await startHttpServer(runtime, { port: options.port ?? 0 });
  const url = http?.url ?? '';
  return {
    url,
    config,
    runtime,
    database,
    dataDir,
    logs,
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      let body: string | undefined;
      if (opts.rawBody !== undefined) body = opts.rawBody;
      else if (opts.body !== undefined) body = JSON.stringify(opts.body);
      if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
        headers['content-type'] = 'application/json';
      const response = await fetch(url + path, { method, headers, body });
      const text = await response.text();
      let parsed: unknown = text;
      if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
      return { status: response.status, headers: response.headers, body: parsed as never, text };
    },
    async close() {
      await http?.close(1000);
      await stopRuntime(runtime);
      if (!options.database) await database.drop().catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// Browser tests: Debian's Chromium driven by playwright-core, and a TCP relay that lets a test cut the
// connections between the browser and Herald (a dropped stream) and hold new ones off for a while.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { chromiumMissing } from './skip-reasons.ts';

export const CHROMIUM_PATH = '/usr/bin/chromium';
/** Why the browser tests are skipped on this machine; null when they run. */
export const noChromium = chromiumMissing(CHROMIUM_PATH);

export interface ChromiumSession {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Headless Chromium with a fresh user data directory (service workers and permissions start clean). */
export async function launchChromium(options: { javaScriptEnabled?: boolean } = {}): Promise<ChromiumSession> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'herald-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1100, height: 760 },
    timeout: 60_000,
    ...(options.javaScriptEnabled === false ? { javaScriptEnabled: false } : {}),
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A fresh tab (its own sessionStorage) that records script errors and policy violations in `problems`.
 * Failed resources are left out: 4xx answers a page expects (a spent link) show as those.
 */
export async function recordingPage(session: ChromiumSession, problems: string[]): Promise<Page> {
  const page = await session.context.newPage();
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    const text = message.text();
    if (message.type() === 'error' && !text.startsWith('Failed to load resource')) problems.push(`console: ${text}`);
  });
  return page;
}

export interface TcpRelay {
  /** http://127.0.0.1:<port>: the browser's view of Herald. */
  url: string;
  /** Cuts every open connection and refuses new ones until up(). */
  down(): void;
  up(): void;
  /** Connections opened so far. */
  readonly connections: number;
  close(): Promise<void>;
}

/** A transparent TCP relay to Herald on `target` (host:port). */
export async function startTcpRelay(target: URL): Promise<TcpRelay> {
  const sockets = new Set<Socket>();
  let isDown = false;
  let connections = 0;
  const server: Server = createServer((client) => {
    if (isDown) {
      client.destroy();
      return;
    }
    connections += 1;
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    down() {
      isDown = true;
      for (const s of sockets) s.destroy();
    },
    up() {
      isDown = false;
    },
    get connections() {
      return connections;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

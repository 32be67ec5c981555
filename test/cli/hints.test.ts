// The hints the CLI gives for the usual slips: an API URL with /v1 where the base URL belongs, a
// second Herald started on a port that is taken, and --wait for events that no worker picks up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer } from '../../server/app/http-server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { runCli } from '../support/cli.ts';
import { createTenantFixture, insertInboxTemplate, insertNotificationType } from '../support/fixtures.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('remote mode --url', () => {
  it('refuses a URL ending in /v1 with the base URL to use instead (exit 2), rather than calling /v1/v1/...', async () => {
    for (const url of [`${app.url}/v1`, `${app.url}/v1/`]) {
      const res = await runCli(['events', 'list', '--url', url, '--api-key', 'sk_not-sent'], {
        env: { HERALD_URL: undefined, HERALD_API_KEY: undefined },
      });
      expect(res.code, res.stderr).toBe(2);
      expect(res.stderr).toContain(`--url is Herald's base URL, without /v1: try ${app.url}\n`);
    }
    const env = await runCli(['events', 'list'], {
      env: { HERALD_URL: `${app.url}/v1`, HERALD_API_KEY: 'sk_not-sent' },
    });
    expect(env.code).toBe(2);
    expect(env.stderr).toMatch(/without \/v1/);
  });
});

describe('a second start on a used port', () => {
  it('says another Herald may be running there', async () => {
    const port = Number(new URL(app.url).port);
    await expect(startHttpServer(app.runtime, { host: '127.0.0.1', port })).rejects.toThrow(
      `port ${port} on 127.0.0.1 is already in use: another Herald may be running there`,
    );
    expect((await app.request('GET', '/healthz')).status).toBe(200);
  });
});

describe('herald send --wait without a worker', () => {
  it('says the events are still queued and asks whether a worker runs', async () => {
    const api = await startTestApp({ role: 'api' });
    try {
      const acme = await createTenantFixture(api, 'NoWorker');
      await insertNotificationType(api, acme.tenantId, { key: 'ping' });
      await insertInboxTemplate(api, acme.tenantId, { type: 'ping', title: 'Ping', content: 'pong' });
      const res = await runCli([
        'send',
        '--type',
        'ping',
        '--to',
        'u1',
        '--wait',
        '--timeout',
        '2',
        '--url',
        api.url,
        '--api-key',
        acme.serviceKey,
      ]);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain('1 event(s) not final after 2 s: still queued, is a worker running?');
    } finally {
      await api.close();
    }
  });
});

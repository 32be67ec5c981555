// The tenant's chat bot transports: GET /v1/chat-transport (an array, priority order), PUT and DELETE
// /v1/chat-transport/{provider} (slack, telegram; the bot token write-only, encrypted), and test sends
// to a channel or chat id through the Slack and Telegram peers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import {
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  sqlOne,
  type TenantFixture,
} from '../../support/fixtures.ts';
import {
  startSlackPeer,
  startTelegramPeer,
  type SlackPeer,
  type TelegramPeer,
} from '../../support/provider-peers/index.ts';

let app: TestApp;
let slack: SlackPeer;
let telegram: TelegramPeer;
let a: TenantFixture;
let b: TenantFixture;

beforeAll(async () => {
  [slack, telegram] = await Promise.all([
    startSlackPeer({ channels: ['C0DEPLOYS'] }),
    startTelegramPeer({ chats: ['12345'] }),
  ]);
  app = await startTestApp({ config: { providers: { slackUrl: slack.url, telegramUrl: telegram.url } } });
  a = await createTenantFixture(app, 'Acme');
  b = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  await app?.close();
  await Promise.all([slack?.close(), telegram?.close()]);
});

describe('PUT /v1/chat-transport/{provider}', () => {
  it('stores the bot token encrypted and answers the entry without it', async () => {
    const res = await app.request('PUT', '/v1/chat-transport/slack', {
      token: a.serviceKey,
      body: { bot_token: slack.botToken, priority: 5 },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      provider: 'slack',
      priority: 5,
      enabled: true,
      settings: {},
      credentials_unreadable: false,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(res.text).not.toContain(slack.botToken);
    const row = await sqlOne<{ secrets_ciphertext: string }>(
      app,
      `SELECT secrets_ciphertext FROM chat_transports WHERE tenant_id = $1 AND provider = 'slack'`,
      [a.tenantId],
    );
    expect(row!.secrets_ciphertext).not.toContain(slack.botToken);
    expect(
      JSON.parse(app.runtime.keyRing.decrypt(row!.secrets_ciphertext, `chat_transports/${a.tenantId}/slack/secrets`)),
    ).toEqual({ bot_token: slack.botToken });
  });

  it('keeps the token when a later PUT omits it, and changes priority and enabled', async () => {
    const telegramPut = await app.request('PUT', '/v1/chat-transport/telegram', {
      token: a.ownerToken,
      body: { bot_token: telegram.token },
    });
    expect(telegramPut.body).toMatchObject({ provider: 'telegram', priority: 0, enabled: true });
    expect(telegramPut.body.settings).toEqual({ bot_id: telegram.token.split(':')[0] });
    const res = await app.request('PUT', '/v1/chat-transport/telegram', {
      token: a.serviceKey,
      body: { enabled: false, priority: 9 },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ provider: 'telegram', priority: 9, enabled: false });
    const test = await app.request('POST', '/v1/chat-transport/telegram/test', {
      token: a.serviceKey,
      body: { chat_id: '12345' },
    });
    expect(test.body).toEqual({ ok: true, message_id: expect.any(String) });
    await app.request('PUT', '/v1/chat-transport/telegram', { token: a.serviceKey, body: { enabled: true } });
  });

  it('answers 422 naming the field', async () => {
    const cases: Array<[string, unknown, Array<string | number>]> = [
      ['slack', { bot_token: 'not-a-token' }, ['body', 'bot_token']],
      ['telegram', { bot_token: 'xoxb-123456789012-abcdefghijkl' }, ['body', 'bot_token']],
      ['slack', { bot_token: slack.botToken, priority: -1 }, ['body', 'priority']],
      ['slack', { bot_token: slack.botToken, enabled: 'yes' }, ['body', 'enabled']],
      ['teams', { bot_token: slack.botToken }, ['path', 'provider']],
    ];
    for (const [provider, body, loc] of cases)
      expectValidationError(
        await app.request('PUT', `/v1/chat-transport/${provider}`, { token: a.serviceKey, body }),
        loc,
      );
    // The first PUT of a provider needs the token.
    expectValidationError(
      await app.request('PUT', '/v1/chat-transport/slack', { token: b.serviceKey, body: { priority: 1 } }),
      ['body', 'bot_token'],
    );
    const malformed = await app.request('PUT', '/v1/chat-transport/slack', { token: a.serviceKey, rawBody: '{' });
    expect(malformed.status).toBe(422);
  });

  it('is management only', async () => {
    await expectManagementOnly(app, a, 'PUT', '/v1/chat-transport/slack', { bot_token: slack.botToken });
  });
});

describe('GET /v1/chat-transport', () => {
  it("lists the tenant's own transports in priority order (slack 5, telegram 9), never another tenant's", async () => {
    const res = await app.request('GET', '/v1/chat-transport', { token: a.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body.map((t: { provider: string }) => t.provider)).toEqual(['slack', 'telegram']);
    expect(res.text).not.toContain(slack.botToken);
    expect(res.text).not.toContain(telegram.token);
    expect((await app.request('GET', '/v1/chat-transport', { token: b.serviceKey })).body).toEqual([]);
    await expectManagementOnly(app, a, 'GET', '/v1/chat-transport');
  });

  it('flags a token whose key is gone as credentials_unreadable', async () => {
    const fx = await createTenantFixture(app, 'Lost key');
    await app.request('PUT', '/v1/chat-transport/slack', { token: fx.serviceKey, body: { bot_token: slack.botToken } });
    await sqlOne(
      app,
      `UPDATE chat_transports SET secrets_ciphertext = 'gone:' || secrets_ciphertext WHERE tenant_id = $1`,
      [fx.tenantId],
    );
    const res = await app.request('GET', '/v1/chat-transport', { token: fx.serviceKey });
    expect(res.body[0]).toMatchObject({ provider: 'slack', credentials_unreadable: true });
    const test = await app.request('POST', '/v1/chat-transport/slack/test', {
      token: fx.serviceKey,
      body: { channel: 'C0DEPLOYS' },
    });
    expect(test.body.ok).toBe(false);
    expect(test.body.error).toMatch(/^credentials_unreadable/);
  });
});

describe('POST /v1/chat-transport/{provider}/test', () => {
  it('posts with the bot and reports the message id', async () => {
    const res = await app.request('POST', '/v1/chat-transport/slack/test', {
      token: a.serviceKey,
      body: { channel: 'C0DEPLOYS', text: 'Hello **team**' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, message_id: expect.any(String) });
    expect(slack.received.at(-1)).toMatchObject({ via: 'api', channel: 'C0DEPLOYS' });
    expect(slack.received.at(-1)!.text).toContain('Hello *team*');
    const tg = await app.request('POST', '/v1/chat-transport/telegram/test', {
      token: a.serviceKey,
      body: { chat_id: 12345 },
    });
    expect(tg.body).toEqual({ ok: true, message_id: expect.any(String) });
  });

  it("reports the provider's refusal", async () => {
    const res = await app.request('POST', '/v1/chat-transport/slack/test', {
      token: a.serviceKey,
      body: { channel: 'C0NOWHERE' },
    });
    expect(res.body).toEqual({ ok: false, error: 'slack channel_not_found' });
  });

  it('answers 422 without a target, without a transport, or for a malformed one', async () => {
    expectValidationError(
      await app.request('POST', '/v1/chat-transport/slack/test', { token: a.serviceKey, body: {} }),
      ['body', 'channel'],
    );
    expectValidationError(
      await app.request('POST', '/v1/chat-transport/telegram/test', { token: a.serviceKey, body: { channel: 'C1' } }),
      ['body', 'chat_id'],
    );
    expectValidationError(
      await app.request('POST', '/v1/chat-transport/telegram/test', { token: a.serviceKey, body: { chat_id: 'x y' } }),
      ['body', 'chat_id'],
    );
    const none = await app.request('POST', '/v1/chat-transport/slack/test', {
      token: b.serviceKey,
      body: { channel: 'C0DEPLOYS' },
    });
    expect(none.status).toBe(422);
    expect(none.body.code).toBe('not_configured');
    await expectManagementOnly(app, a, 'POST', '/v1/chat-transport/slack/test', { channel: 'C0DEPLOYS' });
  });
});

describe('DELETE /v1/chat-transport/{provider}', () => {
  it("removes the tenant's transport only", async () => {
    await app.request('PUT', '/v1/chat-transport/slack', { token: b.serviceKey, body: { bot_token: slack.botToken } });
    await expectManagementOnly(app, a, 'DELETE', '/v1/chat-transport/slack');
    expectValidationError(await app.request('DELETE', '/v1/chat-transport/sms', { token: a.serviceKey }), [
      'path',
      'provider',
    ]);
    expect((await app.request('DELETE', '/v1/chat-transport/slack', { token: a.serviceKey })).status).toBe(204);
    const left = await app.request('GET', '/v1/chat-transport', { token: a.serviceKey });
    expect(left.body.map((t: { provider: string }) => t.provider)).toEqual(['telegram']);
    expect((await app.request('GET', '/v1/chat-transport', { token: b.serviceKey })).body).toHaveLength(1);
  });
});

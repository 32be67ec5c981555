// Chat deliveries through the real worker to peers speaking each provider's wire format: Slack
// (incoming webhooks and chat.postMessage with the tenant's bot), Teams (Adaptive Card), Discord
// (embeds, ?wait=true), Telegram (sendMessage, HTML), Mattermost and Google Chat. Each provider's
// success, its permanent errors (a webhook gone fails without retry and keeps the destination), its
// retryable ones (retried later, then sent), a 429 with Retry-After that pauses only that destination,
// and a webhook URL that reaches a private address at send time. The URL never shows whole.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../support/app.ts';
import {
  createTenantFixture,
  insertInboxTemplate,
  insertNotificationType,
  sql,
  sqlOne,
  waitForFinal,
  type TenantFixture,
} from '../../support/fixtures.ts';
import {
  startDiscordPeer,
  startGoogleChatPeer,
  startMattermostPeer,
  startSlackPeer,
  startTeamsPeer,
  startTelegramPeer,
  ADAPTIVE_CARD,
  type DiscordPeer,
  type GoogleChatPeer,
  type MattermostPeer,
  type SlackPeer,
  type TeamsPeer,
  type TelegramPeer,
} from '../../support/provider-peers/index.ts';
import { sendWebhook } from '../../../server/channels/chat/providers.ts';
import { execute } from '../../../server/base/db/sql.ts';
import { newId } from '../../../server/base/ids.ts';
import { chatWebhookUrlAad } from '../../../server/base/crypto/aad.ts';

const TELEGRAM_CHAT = '-1001234567890';

let app: TestApp;
let slack: SlackPeer;
let teams: TeamsPeer;
let discord: DiscordPeer;
let telegram: TelegramPeer;
let mattermost: MattermostPeer;
let google: GoogleChatPeer;
let a: TenantFixture;

interface DeliveryRow {
  destination: string;
  status: string;
  provider: string | null;
  last_error: string | null;
  provider_message_id: string | null;
  attempts: number;
  provider_attempts: Array<{ provider: string; outcome: string; error: string | null }>;
}

beforeAll(async () => {
  [slack, teams, discord, telegram, mattermost, google] = await Promise.all([
    startSlackPeer({ channels: ['C0DEPLOYS', 'C0PRIVATE'], notInChannel: ['C0PRIVATE'] }),
    startTeamsPeer(),
    startDiscordPeer(),
    startTelegramPeer({ chats: [TELEGRAM_CHAT, '42'], blocked: ['42'] }),
    startMattermostPeer(),
    startGoogleChatPeer(),
  ]);
  app = await startTestApp({
    config: {
      allowPrivateWebhookUrls: true,
      providers: { slackUrl: slack.url, telegramUrl: telegram.url },
    },
  });
  a = await createTenantFixture(app, 'Acme');
  await insertNotificationType(app, a.tenantId, {
    key: 'deploy',
    channels: { inbox: false, email: false, push: false, web_push: false, chat: true },
  });
  await insertInboxTemplate(app, a.tenantId, {
    type: 'deploy',
    title: 'Deploy {{ version }} <done>',
    content: 'Build **{{ version }}** is _live_: [logs](https://ci.example.test/run/1)\n\n- api & web\n- `worker`',
    actionUrl: 'https://ci.example.test/run/1',
  });
  for (const provider of ['slack', 'telegram']) {
    const token = provider === 'slack' ? slack.botToken : telegram.token;
    const res = await app.request('PUT', `/v1/chat-transport/${provider}`, {
      token: a.serviceKey,
      body: { bot_token: token },
    });
    expect(res.status).toBe(200);
  }
});
afterAll(async () => {
  await app?.close();
  await Promise.all([slack, teams, discord, telegram, mattermost, google].map((p) => p?.close()));
});

async function destination(contactId: string, body: Record<string, unknown>): Promise<string> {
  const res = await app.request('POST', `/v1/contacts/${contactId}/chat-destinations`, { token: a.serviceKey, body });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function trigger(externalId: string, version = '1.4.2'): Promise<string> {
  const res = await app.request('POST', '/v1/notifications', {
    token: a.serviceKey,
    body: { type: 'deploy', recipients: [externalId], variables: { version } },
  });
  expect(res.status).toBe(202);
  return res.body.events[0].event_id as string;
}

function deliveriesOf(eventId: string): Promise<DeliveryRow[]> {
  return sql<DeliveryRow>(
    app,
    `SELECT destination, status, provider, last_error, provider_message_id, attempts, provider_attempts
       FROM deliveries WHERE event_id = $1 AND channel = 'chat'`,
    [eventId],
  );
}

async function deliverTo(externalId: string): Promise<{ eventId: string; rows: Map<string, DeliveryRow> }> {
  const eventId = await trigger(externalId);
  await waitForFinal(app, [eventId]);
  return { eventId, rows: new Map((await deliveriesOf(eventId)).map((d) => [d.destination, d])) };
}

describe('each provider, sent', () => {
  it('posts the message in every provider format and records the provider and its message id', async () => {
    const contact = await a.contact('team-all');
    const hooks = {
      slack: slack.webhookUrl(),
      teams: teams.webhookUrl('workflow'),
      discord: discord.webhookUrl(),
      mattermost: mattermost.webhookUrl(),
      google: google.webhookUrl(),
    };
    const ids = {
      slackHook: await destination(contact, { provider: 'slack', webhook_url: hooks.slack }),
      slackBot: await destination(contact, { provider: 'slack', channel: 'C0DEPLOYS' }),
      teams: await destination(contact, { provider: 'teams', webhook_url: hooks.teams }),
      discord: await destination(contact, { provider: 'discord', webhook_url: hooks.discord }),
      telegram: await destination(contact, { provider: 'telegram', chat_id: TELEGRAM_CHAT }),
      mattermost: await destination(contact, { provider: 'mattermost', webhook_url: hooks.mattermost }),
      google: await destination(contact, { provider: 'google_chat', webhook_url: hooks.google }),
    };
    const { eventId, rows } = await deliverTo('team-all');
    expect(rows.size).toBe(7);
    for (const [name, id] of Object.entries(ids)) {
      const row = rows.get(id)!;
      expect(row.status, `${name}: ${row.last_error}`).toBe('sent');
      expect(row.provider_attempts).toEqual([expect.objectContaining({ outcome: 'sent', provider: row.provider })]);
    }
    expect(rows.get(ids.google)!.provider).toBe('google_chat');

    // Slack webhook: mrkdwn, & < > escaped, the link as <url|text>.
    const viaHook = slack.received.find((m) => m.via === 'webhook')!;
    expect(viaHook.text).toBe(
      '*Deploy 1.4.2 &lt;done&gt;*\nBuild *1.4.2* is _live_: <https://ci.example.test/run/1|logs>\n\n• api &amp; web\n• `worker`\n<https://ci.example.test/run/1>',
    );
    // Slack bot: chat.postMessage to the channel with the bearer token; ts is the message id.
    const viaApi = slack.received.find((m) => m.via === 'api')!;
    expect(viaApi.channel).toBe('C0DEPLOYS');
    expect(viaApi.text).toBe(viaHook.text);
    expect(rows.get(ids.slackBot)!.provider_message_id).toMatch(/^\d+\.\d{6}$/);
    // Teams: an Adaptive Card with the title, the body as TextBlock markdown and an Open button.
    const card = teams.received[0]!;
    expect(card.payload.type).toBe('message');
    expect((card.attachments[0] as { contentType: string }).contentType).toBe(ADAPTIVE_CARD);
    expect(card.card).toMatchObject({
      type: 'AdaptiveCard',
      version: '1.4',
      body: [
        { type: 'TextBlock', text: 'Deploy 1.4.2 <done>', weight: 'Bolder' },
        {
          type: 'TextBlock',
          text: 'Build **1.4.2** is _live_: [logs](https://ci.example.test/run/1)\n\n- api & web\n- worker',
        },
      ],
      actions: [{ type: 'Action.OpenUrl', url: 'https://ci.example.test/run/1' }],
    });
    // Discord: an embed, ?wait=true so the answer carries the message id.
    const embed = discord.received[0]!;
    expect(embed.wait).toBe(true);
    expect(embed.embeds).toEqual([
      {
        title: 'Deploy 1.4.2 <done>',
        description: 'Build **1.4.2** is *live*: [logs](https://ci.example.test/run/1)\n\n- api & web\n- `worker`',
        url: 'https://ci.example.test/run/1',
      },
    ]);
    expect(rows.get(ids.discord)!.provider_message_id).toBe(embed.id);
    // Telegram: HTML parse mode, parsed as Telegram parses it.
    const sent = telegram.received[0]!;
    expect(sent).toMatchObject({ chatId: TELEGRAM_CHAT, parseMode: 'HTML' });
    expect(sent.text).toBe(
      '<b>Deploy 1.4.2 &lt;done&gt;</b>\nBuild <b>1.4.2</b> is <i>live</i>: <a href="https://ci.example.test/run/1">logs</a>\n\n• api &amp; web\n• <code>worker</code>\n<a href="https://ci.example.test/run/1">https://ci.example.test/run/1</a>',
    );
    expect(sent.plain).toContain('Deploy 1.4.2 <done>');
    expect(rows.get(ids.telegram)!.provider_message_id).toBe(String(sent.messageId));
    // Mattermost: Slack-compatible {text} in markdown; Google Chat: {text} in its own formatting.
    expect(mattermost.received[0]!.text).toBe(
      '**Deploy 1.4.2 <done>**\nBuild **1.4.2** is _live_: [logs](https://ci.example.test/run/1)\n\n- api & web\n- `worker`\nhttps://ci.example.test/run/1',
    );
    expect(google.received[0]!.text).toBe(
      '*Deploy 1.4.2 <done>*\nBuild *1.4.2* is _live_: <https://ci.example.test/run/1|logs>\n\n• api & web\n• `worker`\n<https://ci.example.test/run/1>',
    );
    expect(rows.get(ids.google)!.provider_message_id).toBe(google.received[0]!.name);

    // The event status shows hints and providers, never a webhook URL.
    const status = await app.request('GET', `/v1/notifications/${eventId}`, { token: a.serviceKey });
    expect(status.status).toBe(200);
    const everything = [status.text, app.logs.join('\n')].join('\n');
    for (const url of Object.values(hooks)) expect(everything).not.toContain(new URL(url).pathname);
    expect(everything).not.toContain(slack.botToken);
    expect(everything).not.toContain(telegram.token);
  });
});

describe('permanent errors', () => {
  it('fails a gone webhook without retry, says so, and keeps the destination', async () => {
    const contact = await a.contact('gone');
    const hooks = {
      slack: slack.webhookUrl(),
      teams: teams.webhookUrl('classic'),
      discord: discord.webhookUrl(),
      mattermost: mattermost.webhookUrl(),
      google: google.webhookUrl(),
    };
    const ids = {
      slack: await destination(contact, { provider: 'slack', webhook_url: hooks.slack }),
      teams: await destination(contact, { provider: 'teams', webhook_url: hooks.teams }),
      discord: await destination(contact, { provider: 'discord', webhook_url: hooks.discord }),
      mattermost: await destination(contact, { provider: 'mattermost', webhook_url: hooks.mattermost }),
      google: await destination(contact, { provider: 'google_chat', webhook_url: hooks.google }),
    };
    slack.removeHook(hooks.slack);
    teams.removeHook(hooks.teams);
    discord.removeHook(hooks.discord);
    mattermost.removeHook(hooks.mattermost);
    google.removeHook(hooks.google);
    const { rows } = await deliverTo('gone');
    const expected: Record<keyof typeof ids, string> = {
      slack: 'HTTP 404 no_service',
      teams: 'HTTP 404',
      discord: 'HTTP 404 10015',
      mattermost: 'HTTP 400 web.incoming_webhook.invalid.app_error',
      google: 'HTTP 403 PERMISSION_DENIED',
    };
    for (const [name, id] of Object.entries(ids) as Array<[keyof typeof ids, string]>) {
      const row = rows.get(id)!;
      expect(row.status, name).toBe('failed');
      expect(row.attempts, name).toBe(1);
      expect(row.last_error, name).toContain(expected[name]);
      expect(row.last_error, name).toContain(
        'the webhook URL no longer exists or was revoked; the destination is kept',
      );
    }
    const kept = await app.request('GET', `/v1/contacts/${contact}/chat-destinations`, { token: a.serviceKey });
    expect(kept.body).toHaveLength(5);
  });

  it('fails the bot destinations Slack and Telegram refuse, naming their errors', async () => {
    const contact = await a.contact('refused');
    const ids = {
      notFound: await destination(contact, { provider: 'slack', channel: 'C0UNKNOWN' }),
      notIn: await destination(contact, { provider: 'slack', channel: 'C0PRIVATE' }),
      noChat: await destination(contact, { provider: 'telegram', chat_id: '777' }),
      blocked: await destination(contact, { provider: 'telegram', chat_id: '42' }),
    };
    const { rows } = await deliverTo('refused');
    expect(rows.get(ids.notFound)).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error: 'slack channel_not_found',
    });
    expect(rows.get(ids.notIn)).toMatchObject({ status: 'failed', attempts: 1, last_error: 'slack not_in_channel' });
    expect(rows.get(ids.noChat)).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error: 'HTTP 400: Bad Request: chat not found',
    });
    expect(rows.get(ids.blocked)).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error: 'HTTP 403: Forbidden: bot was blocked by the user',
    });
  });

  it('fails every bot destination with invalid_auth when the stored token is wrong', async () => {
    const fx = await createTenantFixture(app, 'Wrong token');
    await insertNotificationType(app, fx.tenantId, { key: 'deploy', channels: { chat: true } });
    await insertInboxTemplate(app, fx.tenantId, { type: 'deploy', title: 'T', content: 'B' });
    await app.request('PUT', '/v1/chat-transport/slack', {
      token: fx.serviceKey,
      body: { bot_token: 'xoxb-000000000000-wrongwrongwrongwrong' },
    });
    const contact = await fx.contact('wrong');
    const created = await app.request('POST', `/v1/contacts/${contact}/chat-destinations`, {
      token: fx.serviceKey,
      body: { provider: 'slack', channel: 'C0DEPLOYS' },
    });
    const res = await app.request('POST', '/v1/notifications', {
      token: fx.serviceKey,
      body: { type: 'deploy', recipients: ['wrong'] },
    });
    await waitForFinal(app, [res.body.events[0].event_id]);
    expect(
      await sqlOne(app, `SELECT status, last_error FROM deliveries WHERE destination = $1`, [created.body.id]),
    ).toEqual({ status: 'failed', last_error: 'slack invalid_auth' });
  });

  it('skips bot destinations without a transport, or with it switched off', async () => {
    const fx = await createTenantFixture(app, 'No bot');
    await insertNotificationType(app, fx.tenantId, { key: 'deploy', channels: { chat: true } });
    await insertInboxTemplate(app, fx.tenantId, { type: 'deploy', title: 'T', content: 'B' });
    const contact = await fx.contact('nobot');
    for (const body of [
      { provider: 'slack', channel: 'C0DEPLOYS' },
      { provider: 'telegram', chat_id: TELEGRAM_CHAT },
    ])
      await app.request('POST', `/v1/contacts/${contact}/chat-destinations`, { token: fx.serviceKey, body });
    await app.request('PUT', '/v1/chat-transport/telegram', {
      token: fx.serviceKey,
      body: { bot_token: telegram.token, enabled: false },
    });
    const res = await app.request('POST', '/v1/notifications', {
      token: fx.serviceKey,
      body: { type: 'deploy', recipients: ['nobot'] },
    });
    const eventId = res.body.events[0].event_id as string;
    await waitForFinal(app, [eventId]);
    const rows = await sql(
      app,
      `SELECT provider, status, reason FROM deliveries WHERE event_id = $1 ORDER BY provider`,
      [eventId],
    );
    expect(rows).toEqual([
      { provider: 'slack', status: 'skipped', reason: 'no_transport' },
      { provider: 'telegram', status: 'skipped', reason: 'no_transport' },
    ]);
  });
});

describe('retryable errors', () => {
  it('retries a 5xx and a refused connection later, then sends', async () => {
    const contact = await a.contact('flaky');
    const id = await destination(contact, { provider: 'mattermost', webhook_url: mattermost.webhookUrl() });
    mattermost.failNext(1, { status: 503, body: 'upstream unavailable' });
    const { rows } = await deliverTo('flaky');
    const row = rows.get(id)!;
    expect(row.status).toBe('sent');
    expect(row.attempts).toBe(2);
    expect(row.provider_attempts.map((p) => [p.outcome, p.error])).toEqual([
      ['failed', 'HTTP 503'],
      ['sent', null],
    ]);

    const down = await a.contact('down');
    const downId = await destination(down, { provider: 'google_chat', webhook_url: google.webhookUrl() });
    await google.down();
    const eventId = await trigger('down');
    await expect
      .poll(async () => (await deliveriesOf(eventId)).find((d) => d.destination === downId)?.attempts ?? 0, {
        timeout: 15_000,
      })
      .toBeGreaterThanOrEqual(1);
    await google.up();
    await waitForFinal(app, [eventId]);
    const after = (await deliveriesOf(eventId)).find((d) => d.destination === downId)!;
    expect(after.status).toBe('sent');
    expect(after.provider_attempts[0]).toMatchObject({ outcome: 'failed' });
    expect(after.provider_attempts[0]!.error).not.toContain(new URL(google.webhookUrl()).searchParams.get('key')!);
  });

  it('a 429 with Retry-After pauses only that destination: retried later and sent, another not held back', async () => {
    const limited = await a.contact('limited');
    const limitedId = await destination(limited, { provider: 'slack', webhook_url: slack.webhookUrl() });
    slack.rateLimitNext(1, 2);
    const limitedEvent = await trigger('limited');
    await expect
      .poll(async () => (await deliveriesOf(limitedEvent))[0]?.provider_attempts.length ?? 0, { timeout: 15_000 })
      .toBeGreaterThanOrEqual(1);
    const first = (await deliveriesOf(limitedEvent))[0]!;
    expect(first.status).not.toBe('sent');
    expect(first.provider_attempts[0]).toMatchObject({
      outcome: 'failed',
      error: 'HTTP 429 rate_limited: rate limited',
    });

    // Another destination on the same provider goes through at once.
    const free = await a.contact('free');
    const freeId = await destination(free, { provider: 'slack', webhook_url: slack.webhookUrl() });
    const { rows } = await deliverTo('free');
    expect(rows.get(freeId)).toMatchObject({ status: 'sent', attempts: 1 });
    expect((await deliveriesOf(limitedEvent))[0]!.status).not.toBe('sent');

    await waitForFinal(app, [limitedEvent]);
    const done = (await deliveriesOf(limitedEvent)).find((d) => d.destination === limitedId)!;
    expect(done.status).toBe('sent');
    expect(done.attempts).toBeGreaterThanOrEqual(2);
    expect(done.provider_attempts.at(-1)).toMatchObject({ outcome: 'sent' });
    // Between the 429 and the send, an attempt inside the pause is passed over without asking Slack.
    for (const skipped of done.provider_attempts.filter((p) => p.outcome === 'skipped'))
      expect(skipped.error).toMatch(/^paused by the provider/);
  });

  it("reads the pause from Discord's retry_after and Telegram's parameters.retry_after", async () => {
    const hook = discord.webhookUrl();
    discord.failNext(1, {
      status: 429,
      body: { message: 'You are being rate limited.', retry_after: 1.5, global: false },
    });
    const message = { title: 'T', body: 'B', action_url: null };
    expect(await sendWebhook(app.runtime, 'discord', hook, message)).toMatchObject({
      status: 'failed',
      retryable: true,
      retryAfterMs: 1500,
    });
    const contact = await a.contact('tg-limited');
    const id = await destination(contact, { provider: 'telegram', chat_id: TELEGRAM_CHAT });
    telegram.failNext(1, {
      status: 429,
      body: {
        ok: false,
        error_code: 429,
        description: 'Too Many Requests: retry after 1',
        parameters: { retry_after: 1 },
      },
    });
    const { rows } = await deliverTo('tg-limited');
    expect(rows.get(id)!.status).toBe('sent');
    expect(rows.get(id)!.provider_attempts[0]).toMatchObject({
      outcome: 'failed',
      error: 'HTTP 429: Too Many Requests: retry after 1',
    });
  });
});

describe('a webhook URL that reaches a private address at send time', () => {
  let strict: TestApp;
  afterAll(async () => {
    await strict?.close();
  });

  it('fails permanently, naming the switch, and never calls it', async () => {
    strict = await startTestApp({ config: { providers: { slackUrl: slack.url } } });
    const fx = await createTenantFixture(strict, 'Strict');
    await insertNotificationType(strict, fx.tenantId, { key: 'deploy', channels: { chat: true } });
    await insertInboxTemplate(strict, fx.tenantId, { type: 'deploy', title: 'T', content: 'B' });
    const contact = await fx.contact('private');
    // As if the name resolved publicly at write and privately now (DNS rebinding): written by SQL.
    const id = newId();
    const url = mattermost.webhookUrl();
    await execute(
      strict.runtime.orm.em.fork(),
      `INSERT INTO chat_destinations (id, tenant_id, contact_id, provider, webhook_url_ciphertext, webhook_url_hint)
       VALUES ($1, $2, $3, 'mattermost', $4, 'hint')`,
      [id, fx.tenantId, contact, strict.runtime.keyRing.encrypt(url, chatWebhookUrlAad(fx.tenantId, id))],
    );
    const before = mattermost.requests.length;
    const res = await strict.request('POST', '/v1/notifications', {
      token: fx.serviceKey,
      body: { type: 'deploy', recipients: ['private'] },
    });
    await waitForFinal(strict, [res.body.events[0].event_id]);
    const row = await sqlOne<{ status: string; last_error: string; attempts: number }>(
      strict,
      `SELECT status, last_error, attempts FROM deliveries WHERE destination = $1`,
      [id],
    );
    expect(row).toMatchObject({ status: 'failed', attempts: 1 });
    expect(row!.last_error).toContain('does not reach a public address');
    expect(row!.last_error).toContain('allowPrivateWebhookUrls');
    expect(row!.last_error).not.toContain(new URL(url).pathname);
    expect(mattermost.requests.length).toBe(before);
  });
});

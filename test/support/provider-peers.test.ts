// The provider peers speak each provider's wire format: these tests drive them with plain fetch, the way
// Herald's SMS and chat channels will, and pin the replies, the faults and the signed callbacks.
import { createServer } from 'node:http';
import { createHash, createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADAPTIVE_CARD,
  parseEntities,
  smsSegments,
  startDiscordPeer,
  startGoogleChatPeer,
  startHttpGatewayPeer,
  startMattermostPeer,
  startPeerServer,
  startSlackPeer,
  startTeamsPeer,
  startTelegramPeer,
  startTwilioPeer,
  startVonagePeer,
  twilioSignature,
  verifyStandardWebhook,
  vonageSignature,
  type RawRequest,
} from './provider-peers/index.ts';

const json = (value: unknown) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(value),
});
const form = (params: Record<string, string>, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  body: new URLSearchParams(params).toString(),
});

/** A callback receiver standing in for Herald's /callbacks routes. */
async function startCallbackSink() {
  const got: Array<{ path: string; headers: Record<string, string | string[] | undefined>; body: string }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, got, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

let sink: Awaited<ReturnType<typeof startCallbackSink>>;
beforeAll(async () => {
  sink = await startCallbackSink();
});
afterAll(() => sink.close());

describe('shared base', () => {
  it('logs requests, answers faults first, holds answers and refuses connections while down', async () => {
    const peer = await startPeerServer(() => ({ status: 200, body: { fine: true } }));
    try {
      peer.failNext(2, { status: 503, body: 'busy', headers: { 'retry-after': '7' } });
      const first = await fetch(`${peer.url}/a?x=1`, { method: 'POST', body: 'hello' });
      expect(first.status).toBe(503);
      expect(first.headers.get('retry-after')).toBe('7');
      expect(await first.text()).toBe('busy');
      expect((await fetch(`${peer.url}/b`)).status).toBe(503);
      const third = await fetch(`${peer.url}/c`);
      expect(third.status).toBe(200);
      expect(await third.json()).toEqual({ fine: true });
      expect(peer.requests.map((r) => [r.method, r.path])).toEqual([
        ['POST', '/a?x=1'],
        ['GET', '/b'],
        ['GET', '/c'],
      ]);
      expect(peer.requests[0]!.body).toBe('hello');

      peer.pauseAnswers();
      let answered = false;
      const held = fetch(`${peer.url}/held`).then((r) => {
        answered = true;
        return r.status;
      });
      await expect.poll(() => peer.requests.length).toBe(4);
      expect(answered).toBe(false);
      peer.resumeAnswers();
      expect(await held).toBe(200);

      const port = peer.port;
      await peer.down();
      await expect(fetch(`${peer.url}/down`)).rejects.toThrow();
      await peer.up();
      expect(peer.port).toBe(port);
      expect((await fetch(`${peer.url}/up`)).status).toBe(200);
    } finally {
      await peer.close();
    }
  });

  it('counts SMS segments as carriers do', () => {
    expect(smsSegments('a'.repeat(160))).toEqual({ encoding: 'gsm7', segments: 1 });
    expect(smsSegments('a'.repeat(161))).toEqual({ encoding: 'gsm7', segments: 2 });
    expect(smsSegments('€'.repeat(80))).toEqual({ encoding: 'gsm7', segments: 1 });
    expect(smsSegments('ü'.repeat(160))).toEqual({ encoding: 'gsm7', segments: 1 });
    expect(smsSegments('✓'.repeat(70))).toEqual({ encoding: 'ucs2', segments: 1 });
    expect(smsSegments('✓'.repeat(71))).toEqual({ encoding: 'ucs2', segments: 2 });
  });
});

describe('twilio', () => {
  it("computes Twilio's documented example signatures", () => {
    const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
    // Deliberately out of name order: the signature sorts them.
    const params = {
      To: '+18005551212',
      From: '+14158675309',
      Digits: '1234',
      CallSid: 'CA1234567890ABCDE',
      Caller: '+14158675309',
    };
    // The vector of Twilio's helper libraries' test suites and of the older security docs.
    expect(twilioSignature('12345', url, params)).toBe('RSOYDt4T1cUTdK1PDd93/VVr8B8=');
    // The current security page's variant of the same example.
    const current = { ...params, Caller: '+14158675310', From: '+14158675310' };
    expect(twilioSignature('12345', url, current)).toBe('GvWf1cFY/Q7PnoempGyD5oXAezc=');
    expect(twilioSignature('12345', url, { ...params, Digits: '9999' })).not.toBe('RSOYDt4T1cUTdK1PDd93/VVr8B8=');
  });

  it('sends, refuses bad credentials and numbers, and signs callbacks', async () => {
    const peer = await startTwilioPeer({ invalidNumbers: ['+15005550001'] });
    try {
      const endpoint = `${peer.url}/2010-04-01/Accounts/${peer.accountSid}/Messages.json`;
      const auth = `Basic ${Buffer.from(`${peer.accountSid}:${peer.authToken}`).toString('base64')}`;
      const callback = `${sink.url}/callbacks/twilio/tok?x=1`;
      const sent = await fetch(
        endpoint,
        form(
          { To: '+4915112345678', From: '+15005550006', Body: 'Your order shipped', StatusCallback: callback },
          { authorization: auth },
        ),
      );
      expect(sent.status).toBe(201);
      const resource = (await sent.json()) as Record<string, unknown>;
      expect(resource).toMatchObject({
        status: 'queued',
        to: '+4915112345678',
        from: '+15005550006',
        body: 'Your order shipped',
        num_segments: '1',
        account_sid: peer.accountSid,
      });
      expect(resource.sid).toMatch(/^SM[0-9a-f]{32}$/);
      expect(peer.received).toHaveLength(1);
      expect(peer.received[0]).toMatchObject({
        sid: resource.sid,
        statusCallback: callback,
        body: 'Your order shipped',
      });

      const viaService = await fetch(
        endpoint,
        form({ To: '+4915112345678', MessagingServiceSid: `MG${'a'.repeat(32)}`, Body: 'x' }, { authorization: auth }),
      );
      expect(viaService.status).toBe(201);
      expect(await viaService.json()).toMatchObject({ status: 'accepted', from: null });

      const wrong = await fetch(
        endpoint,
        form(
          { To: '+4915112345678', From: '+15005550006', Body: 'x' },
          {
            authorization: `Basic ${Buffer.from(`${peer.accountSid}:nope`).toString('base64')}`,
          },
        ),
      );
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toMatchObject({ code: 20003, status: 401, more_info: expect.any(String) });
      expect((await fetch(endpoint, form({ To: '+49151', From: '+1', Body: 'x' }))).status).toBe(401);

      for (const [to, code] of [
        ['0151 1234', 21211],
        ['+15005550001', 21211],
        ['', 21604],
      ] as const) {
        const res = await fetch(endpoint, form({ To: to, From: '+15005550006', Body: 'x' }, { authorization: auth }));
        expect(res.status).toBe(400);
        expect(await res.json()).toMatchObject({ code, status: 400 });
      }
      const noBody = await fetch(endpoint, form({ To: '+4915112345678', From: '+1500' }, { authorization: auth }));
      expect(await noBody.json()).toMatchObject({ code: 21602 });
      peer.unsubscribed.add('+4915100000000');
      const stopped = await fetch(
        endpoint,
        form({ To: '+4915100000000', From: '+1500', Body: 'x' }, { authorization: auth }),
      );
      expect(await stopped.json()).toMatchObject({ code: 21610, status: 400 });

      peer.rateLimitNext(1);
      const limited = await fetch(
        endpoint,
        form({ To: '+4915112345678', From: '+1', Body: 'x' }, { authorization: auth }),
      );
      expect(limited.status).toBe(429);
      expect(await limited.json()).toMatchObject({ code: 20429 });
      peer.failNext(1, { status: 500, body: { code: 20500, message: 'Internal Server Error', status: 500 } });
      expect((await fetch(endpoint, form({}, { authorization: auth }))).status).toBe(500);
      expect(peer.received).toHaveLength(2);

      const status = await peer.sendStatusCallback(resource.sid as string, 'undelivered');
      expect(status.status).toBe(204);
      const delivered = sink.got.at(-1)!;
      expect(delivered.path).toBe('/callbacks/twilio/tok?x=1');
      const params = Object.fromEntries(new URLSearchParams(delivered.body));
      expect(params).toMatchObject({
        MessageSid: resource.sid,
        MessageStatus: 'undelivered',
        ErrorCode: '30003',
        AccountSid: peer.accountSid,
        To: '+4915112345678',
        From: '+15005550006',
      });
      expect(delivered.headers['x-twilio-signature']).toBe(twilioSignature(peer.authToken, callback, params));

      const inboundUrl = `${sink.url}/callbacks/twilio/tok`;
      await peer.sendInbound(inboundUrl, { From: '+4915112345678', To: '+15005550006', Body: 'STOP' }, 'other');
      const inbound = sink.got.at(-1)!;
      const inboundParams = Object.fromEntries(new URLSearchParams(inbound.body));
      expect(inboundParams).toMatchObject({ From: '+4915112345678', To: '+15005550006', Body: 'STOP' });
      expect(inbound.headers['x-twilio-signature']).toBe(twilioSignature('other', inboundUrl, inboundParams));
    } finally {
      await peer.close();
    }
  });

  it('refuses connections while down and takes messages again on the same port', async () => {
    const peer = await startTwilioPeer();
    try {
      const endpoint = `${peer.url}/2010-04-01/Accounts/${peer.accountSid}/Messages.json`;
      const auth = `Basic ${Buffer.from(`${peer.accountSid}:${peer.authToken}`).toString('base64')}`;
      const send = () =>
        fetch(endpoint, form({ To: '+4915112345678', From: '+1500', Body: 'x' }, { authorization: auth }));
      await peer.down();
      await expect(send()).rejects.toThrow();
      await peer.up();
      expect((await send()).status).toBe(201);
    } finally {
      await peer.close();
    }
  });
});

describe('vonage', () => {
  it('signs as Vonage documents: sorted &name=value, & and = in values replaced', () => {
    const params = { api_key: 'abc', to: '447700900000', text: 'You & Me = Love', timestamp: '1461605396', sig: 'x' };
    const query = '&api_key=abc&text=You _ Me _ Love&timestamp=1461605396&to=447700900000';
    expect(vonageSignature(params, 'secret')).toBe(createHash('md5').update(`${query}secret`).digest('hex'));
    expect(vonageSignature(params, 'secret', 'sha256')).toBe(
      createHmac('sha256', 'secret').update(query).digest('hex').toUpperCase(),
    );
  });

  it('sends, answers errors as 200 with statuses, and posts receipts and inbound messages', async () => {
    const peer = await startVonagePeer({ invalidNumbers: ['4915100000001'] });
    try {
      const endpoint = `${peer.url}/sms/json`;
      const creds = { api_key: peer.apiKey, api_secret: peer.apiSecret };
      const ok = await fetch(endpoint, form({ ...creds, from: 'Herald', to: '4915112345678', text: 'Hello' }));
      expect(ok.status).toBe(200);
      const body = (await ok.json()) as { 'message-count': string; messages: Array<Record<string, string>> };
      expect(body['message-count']).toBe('1');
      expect(body.messages[0]).toMatchObject({
        to: '4915112345678',
        status: '0',
        'remaining-balance': expect.any(String),
        'message-price': expect.any(String),
        network: expect.any(String),
      });
      const messageId = body.messages[0]!['message-id']!;
      expect(peer.received[0]).toMatchObject({ messageId, to: '4915112345678', from: 'Herald', text: 'Hello' });

      const viaJson = await fetch(
        endpoint,
        json({ ...creds, from: 'Herald', to: '+4915112345678', text: 'a'.repeat(200) }),
      );
      const jsonBody = (await viaJson.json()) as { 'message-count': string; messages: unknown[] };
      expect(jsonBody['message-count']).toBe('2');
      expect(jsonBody.messages).toHaveLength(2);

      const statusOf = async (init: RequestInit) =>
        ((await (await fetch(endpoint, init)).json()) as { messages: Array<Record<string, string>> }).messages[0]!;
      expect(await statusOf(form({ ...creds, from: 'Herald', to: '4915112345678' }))).toMatchObject({
        status: '2',
        'error-text': expect.stringContaining('text'),
      });
      expect(await statusOf(form({ ...creds, from: 'Herald', to: 'not-a-number', text: 'x' }))).toMatchObject({
        status: '3',
      });
      expect(await statusOf(form({ ...creds, from: 'Herald', to: '4915100000001', text: 'x' }))).toMatchObject({
        status: '3',
      });
      expect(
        await statusOf(form({ ...creds, api_secret: 'wrong', from: 'H', to: '4915112345678', text: 'x' })),
      ).toMatchObject({
        status: '4',
      });
      peer.statusNext(1, '1');
      expect(await statusOf(form({ ...creds, from: 'H', to: '4915112345678', text: 'x' }))).toMatchObject({
        status: '1',
      });
      peer.statusNext(1, '9');
      expect(await statusOf(form({ ...creds, from: 'H', to: '4915112345678', text: 'x' }))).toMatchObject({
        status: '9',
      });
      expect(peer.received).toHaveLength(2);
      peer.failNext(1, { status: 503, body: 'Service Unavailable' });
      expect((await fetch(endpoint, form(creds))).status).toBe(503);

      await peer.sendDeliveryReceipt(`${sink.url}/callbacks/vonage/tok`, { messageId, status: 'failed', errCode: '6' });
      const dlr = JSON.parse(sink.got.at(-1)!.body) as Record<string, string>;
      expect(dlr).toMatchObject({
        msisdn: '4915112345678',
        to: 'Herald',
        messageId,
        status: 'failed',
        'err-code': '6',
        'api-key': peer.apiKey,
      });
      expect(dlr['message-timestamp']).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
      expect(dlr.sig).toBeUndefined();

      await peer.sendInbound(`${sink.url}/callbacks/vonage/tok`, {
        msisdn: '+4915112345678',
        to: '4930123456',
        text: 'stop please',
        format: 'form',
      });
      const inbound = Object.fromEntries(new URLSearchParams(sink.got.at(-1)!.body));
      expect(inbound).toMatchObject({
        msisdn: '4915112345678',
        to: '4930123456',
        text: 'stop please',
        keyword: 'STOP',
      });
    } finally {
      await peer.close();
    }
  });

  it('checks and applies signatures with the signature secret', async () => {
    const peer = await startVonagePeer({ signatureSecret: 'sigsecret', signatureMethod: 'sha256' });
    try {
      const params: Record<string, string> = {
        api_key: peer.apiKey,
        from: 'Herald',
        to: '4915112345678',
        text: 'Signed & sealed',
        timestamp: String(Math.floor(Date.now() / 1000)),
      };
      const good = await fetch(
        `${peer.url}/sms/json`,
        form({ ...params, sig: vonageSignature(params, 'sigsecret', 'sha256') }),
      );
      expect(((await good.json()) as { messages: Array<{ status: string }> }).messages[0]!.status).toBe('0');
      expect(peer.received[0]!.signed).toBe(true);
      const bad = await fetch(`${peer.url}/sms/json`, form({ ...params, sig: 'F00' }));
      expect(((await bad.json()) as { messages: Array<{ status: string }> }).messages[0]!.status).toBe('14');

      await peer.sendDeliveryReceipt(`${sink.url}/dlr`, {
        messageId: peer.received[0]!.messageId,
        status: 'delivered',
      });
      const dlr = JSON.parse(sink.got.at(-1)!.body) as Record<string, string>;
      expect(dlr.sig).toBe(vonageSignature(dlr, 'sigsecret', 'sha256'));
      expect(dlr.timestamp).toMatch(/^\d+$/);
    } finally {
      await peer.close();
    }
  });
});

describe('slack', () => {
  it('takes incoming webhooks and answers Slack error words', async () => {
    const peer = await startSlackPeer();
    try {
      const hook = peer.webhookUrl();
      expect(new URL(hook).pathname).toMatch(/^\/services\/T[A-Z0-9]+\/B[A-Z0-9]+\/[A-Za-z0-9]+$/);
      const ok = await fetch(hook, json({ text: 'Deploy done', blocks: [{ type: 'section' }] }));
      expect(ok.status).toBe(200);
      expect(await ok.text()).toBe('ok');
      expect(peer.received[0]).toMatchObject({ via: 'webhook', text: 'Deploy done', blocks: [{ type: 'section' }] });

      const unknown = await fetch(`${peer.url}/services/T0/B0/nope`, json({ text: 'x' }));
      expect([unknown.status, await unknown.text()]).toEqual([404, 'no_service']);
      const broken = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
      expect([broken.status, await broken.text()]).toEqual([400, 'invalid_payload']);
      const empty = await fetch(hook, json({}));
      expect([empty.status, await empty.text()]).toEqual([400, 'no_text']);

      peer.rateLimitNext(1, 30);
      const limited = await fetch(hook, json({ text: 'x' }));
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('30');

      peer.removeHook(hook);
      expect((await fetch(hook, json({ text: 'x' }))).status).toBe(404);
      expect(peer.received).toHaveLength(1);
    } finally {
      await peer.close();
    }
  });

  it('answers chat.postMessage as the Web API does', async () => {
    const peer = await startSlackPeer({ channels: ['C0123', 'C0456', 'U0789'], notInChannel: ['C0456'] });
    try {
      const post = (body: unknown, token = peer.botToken) =>
        fetch(`${peer.url}/api/chat.postMessage`, {
          method: 'POST',
          headers: { 'content-type': 'application/json; charset=utf-8', authorization: `Bearer ${token}` },
          body: JSON.stringify(body),
        });
      const ok = await post({ channel: 'C0123', text: 'Hi', blocks: [{ type: 'section' }] });
      expect(ok.status).toBe(200);
      const reply = (await ok.json()) as Record<string, unknown>;
      expect(reply).toMatchObject({ ok: true, channel: 'C0123', message: { text: 'Hi' } });
      expect(reply.ts).toMatch(/^\d+\.\d{6}$/);
      expect(peer.received[0]).toMatchObject({ via: 'api', channel: 'C0123', text: 'Hi' });
      expect(await (await post({ channel: 'U0789', text: 'DM' })).json()).toMatchObject({ ok: true, channel: 'D0789' });

      for (const [body, token, error] of [
        [{ channel: 'C0123', text: 'x' }, 'xoxb-wrong', 'invalid_auth'],
        [{ channel: 'C9999', text: 'x' }, peer.botToken, 'channel_not_found'],
        [{ channel: 'C0456', text: 'x' }, peer.botToken, 'not_in_channel'],
        [{ channel: 'C0123' }, peer.botToken, 'no_text'],
      ] as const) {
        const res = await post(body, token);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ ok: false, error });
      }
      const unauthenticated = await fetch(`${peer.url}/api/chat.postMessage`, json({ channel: 'C0123', text: 'x' }));
      expect(await unauthenticated.json()).toEqual({ ok: false, error: 'not_authed' });

      peer.rateLimitNext(1, 3);
      const limited = await post({ channel: 'C0123', text: 'x' });
      expect([limited.status, limited.headers.get('retry-after')]).toEqual([429, '3']);
      expect(await limited.json()).toEqual({ ok: false, error: 'ratelimited' });
      expect(peer.received).toHaveLength(2);
    } finally {
      await peer.close();
    }
  });
});

describe('teams', () => {
  const card = {
    type: 'message',
    attachments: [
      { contentType: ADAPTIVE_CARD, contentUrl: null, content: { type: 'AdaptiveCard', version: '1.4', body: [] } },
    ],
  };

  it('answers classic webhooks with "1" and workflows with 202', async () => {
    const peer = await startTeamsPeer();
    try {
      const classic = peer.webhookUrl('classic');
      expect(new URL(classic).pathname).toMatch(/^\/webhookb2\/.+@.+\/IncomingWebhook\/[0-9a-f]{32}\//);
      const ok = await fetch(classic, json(card));
      expect([ok.status, await ok.text()]).toEqual([200, '1']);
      expect(peer.received[0]).toMatchObject({ kind: 'classic', card: { type: 'AdaptiveCard' } });
      expect((await fetch(classic, json({ text: 'MessageCard text' }))).status).toBe(200);
      const malformed = await fetch(classic, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: 'nope',
      });
      expect(malformed.status).toBe(400);
      expect((await fetch(classic, json({ attachments: [] }))).status).toBe(400);

      const workflow = peer.webhookUrl('workflow');
      expect(workflow).toMatch(/\/workflows\/[0-9a-f]{32}\/triggers\/manual\/paths\/invoke\?api-version=.*&sig=/);
      const accepted = await fetch(workflow, json(card));
      expect([accepted.status, await accepted.text()]).toEqual([202, '']);
      expect(peer.received.at(-1)).toMatchObject({ kind: 'workflow', card: { version: '1.4' } });
      const schema = await fetch(workflow, json({ text: 'no card' }));
      expect(schema.status).toBe(400);
      expect(await schema.json()).toMatchObject({ error: { code: 'TriggerInputSchemaMismatch' } });
      const badSig = new URL(workflow);
      badSig.searchParams.set('sig', 'forged');
      expect((await fetch(badSig, json(card))).status).toBe(401);

      peer.rateLimitNext(1, 5);
      const limited = await fetch(classic, json(card));
      expect([limited.status, limited.headers.get('retry-after')]).toEqual([429, '5']);
      peer.removeHook(workflow);
      expect((await fetch(workflow, json(card))).status).toBe(404);
      expect(peer.received).toHaveLength(3);
    } finally {
      await peer.close();
    }
  });
});

describe('discord', () => {
  it('answers 204, or 200 with the message under wait=true, and Discord error codes', async () => {
    const peer = await startDiscordPeer();
    try {
      const hook = peer.webhookUrl();
      expect(new URL(hook).pathname).toMatch(/^\/api\/webhooks\/\d+\/[\w-]{68}$/);
      const quiet = await fetch(hook, json({ content: 'Hello' }));
      expect(quiet.status).toBe(204);
      const waited = await fetch(`${hook}?wait=true`, json({ embeds: [{ title: 'Order', description: 'Shipped' }] }));
      expect(waited.status).toBe(200);
      const message = (await waited.json()) as Record<string, unknown>;
      expect(message).toMatchObject({
        id: expect.stringMatching(/^\d+$/),
        embeds: [{ title: 'Order' }],
        webhook_id: expect.any(String),
      });
      expect(peer.received.map((m) => m.wait)).toEqual([false, true]);
      expect(peer.received[1]!.id).toBe(message.id);

      const empty = await fetch(hook, json({ content: '' }));
      expect(empty.status).toBe(400);
      expect(await empty.json()).toEqual({ code: 50006, message: 'Cannot send an empty message' });
      const tooLong = await fetch(hook, json({ content: 'x'.repeat(2001) }));
      expect(await tooLong.json()).toMatchObject({ code: 50035, errors: { content: expect.any(Object) } });
      const unknown = await fetch(`${peer.url}/api/webhooks/1/abc`, json({ content: 'x' }));
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toEqual({ code: 10015, message: 'Unknown Webhook' });
      const wrongToken = await fetch(hook.replace(/\/[^/]+$/, '/wrong'), json({ content: 'x' }));
      expect([wrongToken.status, ((await wrongToken.json()) as { code: number }).code]).toEqual([401, 50027]);

      peer.rateLimitNext(1, 1.5);
      const limited = await fetch(hook, json({ content: 'x' }));
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('2');
      expect(await limited.json()).toEqual({ message: 'You are being rate limited.', retry_after: 1.5, global: false });
      expect(peer.received).toHaveLength(2);
    } finally {
      await peer.close();
    }
  });
});

describe('telegram', () => {
  it('sends and answers Telegram errors with matching HTTP statuses', async () => {
    const peer = await startTelegramPeer({ chats: [123456, '@herald_news', 999], blocked: [999] });
    try {
      const send = (body: unknown, token = peer.token) => fetch(`${peer.url}/bot${token}/sendMessage`, json(body));
      const ok = await send({ chat_id: 123456, text: 'Order *shipped*\\!', parse_mode: 'MarkdownV2' });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({
        ok: true,
        result: { message_id: 1, chat: { id: 123456, type: 'private' }, text: 'Order shipped!' },
      });
      expect(peer.received[0]).toMatchObject({ chatId: '123456', text: 'Order *shipped*\\!', parseMode: 'MarkdownV2' });
      const channel = await fetch(
        `${peer.url}/bot${peer.token}/sendMessage`,
        form({ chat_id: '@herald_news', text: 'hi' }),
      );
      expect(await channel.json()).toMatchObject({ ok: true, result: { chat: { type: 'channel' } } });

      const errorOf = async (res: Response) => [res.status, await res.json()];
      expect(await errorOf(await send({ chat_id: 123456, text: 'x' }, '1:wrong'))).toEqual([
        401,
        { ok: false, error_code: 401, description: 'Unauthorized' },
      ]);
      expect(await errorOf(await send({ chat_id: 42, text: 'x' }))).toEqual([
        400,
        { ok: false, error_code: 400, description: 'Bad Request: chat not found' },
      ]);
      expect(await errorOf(await send({ chat_id: 999, text: 'x' }))).toEqual([
        403,
        { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' },
      ]);
      const unescaped = await send({ chat_id: 123456, text: 'Total: 3.50!', parse_mode: 'MarkdownV2' });
      expect(unescaped.status).toBe(400);
      expect(((await unescaped.json()) as { description: string }).description).toMatch(
        /^Bad Request: can't parse entities: Character '\.' is reserved/,
      );

      peer.rateLimitNext(1, 7);
      expect(await errorOf(await send({ chat_id: 123456, text: 'x' }))).toEqual([
        429,
        { ok: false, error_code: 429, description: 'Too Many Requests: retry after 7', parameters: { retry_after: 7 } },
      ]);
      expect(peer.received).toHaveLength(2);
    } finally {
      await peer.close();
    }
  });

  it('parses MarkdownV2 and HTML as Telegram does', () => {
    expect(
      parseEntities('*bold* _it_ __u__ ~s~ ||sp|| [link](https://x.test/a\\)b) `c.d` ```js\nx=1.\n```', 'MarkdownV2'),
    ).toEqual({
      plain: 'bold it u s sp link c.d x=1.\n',
    });
    expect(parseEntities('> quoted\n\\> literal', 'MarkdownV2')).toEqual({ plain: ' quoted\n> literal' });
    expect(parseEntities('*open', 'MarkdownV2')).toEqual({
      error: "can't parse entities: Can't find end of Bold entity at byte offset 0",
    });
    expect(parseEntities('a-b', 'MarkdownV2')).toMatchObject({
      error: expect.stringContaining("Character '-' is reserved"),
    });
    expect(parseEntities('<b>Hi</b> &amp; <a href="https://x.test">there</a>', 'HTML')).toEqual({
      plain: 'Hi & there',
    });
    expect(parseEntities('<div>x</div>', 'HTML')).toMatchObject({
      error: expect.stringContaining('Unsupported start tag "div"'),
    });
    expect(parseEntities('<b>x', 'HTML')).toMatchObject({ error: expect.stringContaining("Can't find end tag") });
    expect(parseEntities('x', 'Bogus')).toEqual({ error: 'unsupported parse_mode' });
  });
});

describe('mattermost', () => {
  it('answers "ok" and Mattermost AppErrors', async () => {
    const peer = await startMattermostPeer();
    try {
      const hook = peer.webhookUrl();
      const ok = await fetch(hook, json({ text: 'Hello', username: 'herald', props: { card: 'more' } }));
      expect([ok.status, await ok.text()]).toEqual([200, 'ok']);
      expect(peer.received[0]).toMatchObject({ text: 'Hello', username: 'herald', props: { card: 'more' } });
      const viaForm = await fetch(hook, form({ payload: JSON.stringify({ text: 'form' }) }));
      expect(viaForm.status).toBe(200);

      const unknown = await fetch(`${peer.url}/hooks/abc123`, json({ text: 'x' }));
      expect(unknown.status).toBe(400);
      expect(await unknown.json()).toMatchObject({ id: 'web.incoming_webhook.invalid.app_error', status_code: 400 });
      const noText = await fetch(hook, json({ username: 'x' }));
      expect(await noText.json()).toMatchObject({ id: 'web.incoming_webhook.text.app_error' });
      const broken = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
      expect(await broken.json()).toMatchObject({ id: 'web.incoming_webhook.parse.app_error' });
      peer.removeHook(hook);
      expect((await fetch(hook, json({ text: 'x' }))).status).toBe(400);
      expect(peer.received).toHaveLength(2);
    } finally {
      await peer.close();
    }
  });
});

describe('google chat', () => {
  it('answers the Message resource and Google error JSON', async () => {
    const peer = await startGoogleChatPeer();
    try {
      const hook = peer.webhookUrl('AAAAspace1');
      const ok = await fetch(hook, json({ text: 'Hello' }));
      expect(ok.status).toBe(200);
      const message = (await ok.json()) as Record<string, unknown>;
      expect(message).toMatchObject({ text: 'Hello', sender: { type: 'BOT' }, space: { name: 'spaces/AAAAspace1' } });
      expect(message.name).toMatch(/^spaces\/AAAAspace1\/messages\/.+/);
      expect(peer.received[0]).toMatchObject({ space: 'AAAAspace1', text: 'Hello', name: message.name });
      expect((await fetch(hook, json({ cardsV2: [{ cardId: 'c', card: {} }] }))).status).toBe(200);

      const badKey = new URL(hook);
      badKey.searchParams.set('key', 'AIzaWrong');
      const keyRes = await fetch(badKey, json({ text: 'x' }));
      expect(keyRes.status).toBe(400);
      expect(await keyRes.json()).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT' } });
      const badToken = new URL(hook);
      badToken.searchParams.set('token', 'forged');
      const tokenRes = await fetch(badToken, json({ text: 'x' }));
      expect(tokenRes.status).toBe(403);
      expect(await tokenRes.json()).toMatchObject({ error: { code: 403, status: 'PERMISSION_DENIED' } });
      const empty = await fetch(hook, json({}));
      expect(await empty.json()).toMatchObject({ error: { code: 400, message: expect.stringContaining('empty') } });

      peer.rateLimitNext(1);
      const limited = await fetch(hook, json({ text: 'x' }));
      expect(limited.status).toBe(429);
      expect(await limited.json()).toMatchObject({ error: { code: 429, status: 'RESOURCE_EXHAUSTED' } });
      peer.removeHook(hook);
      expect((await fetch(hook, json({ text: 'x' }))).status).toBe(403);
      expect(peer.received).toHaveLength(2);
    } finally {
      await peer.close();
    }
  });
});

describe('http gateway', () => {
  it('records requests, answers as told and verifies Standard Webhooks signatures', async () => {
    const secret = `whsec_${Buffer.from('a-test-secret-of-32-bytes-length').toString('base64')}`;
    const peer = await startHttpGatewayPeer({ secret });
    try {
      const body = JSON.stringify({ to: '+4915112345678', text: 'Hi' });
      const id = 'msg_1';
      const at = new Date();
      const signature = new Webhook(secret).sign(id, at, body);
      const res = await fetch(`${peer.url}/sms`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body,
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true });
      const got = peer.received[0]!;
      expect(got).toMatchObject({ method: 'POST', path: '/sms', json: { to: '+4915112345678', text: 'Hi' } });
      expect(peer.verify(got)).toEqual({ to: '+4915112345678', text: 'Hi' });
      const tampered: Pick<RawRequest, 'headers' | 'body'> = { headers: got.headers, body: body.replace('Hi', 'Ho') };
      expect(() => verifyStandardWebhook(secret, tampered)).toThrow();

      peer.respondWith({ status: 422, body: { error: 'bad number' } });
      expect((await fetch(`${peer.url}/sms`, json({}))).status).toBe(422);
      peer.failNext(1, { status: 502, body: 'bad gateway' });
      expect((await fetch(`${peer.url}/sms`, json({}))).status).toBe(502);
      expect(peer.requests).toHaveLength(3);
      expect(peer.received).toHaveLength(2);
      await peer.down();
      await expect(fetch(`${peer.url}/sms`, json({}))).rejects.toThrow();
      await peer.up();
      expect((await fetch(`${peer.url}/sms`, json({}))).status).toBe(422);
    } finally {
      await peer.close();
    }
  });
});

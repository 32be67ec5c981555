// End to end through real peers: a tenant configured only through Herald's HTTP API triggers one
// notification for three recipients, and it arrives in their inboxes (and on a connected stream), at a
// real SMTP server (branded HTML, text part, DKIM verified by an independent verifier against the DNS
// record served by a local resolver), at an APNs-protocol HTTP/2 peer, an FCM-protocol peer and an
// independent web push service that decrypts the payload. Then: an opt-out skips exactly that channel,
// and destinations the providers report gone are pruned without retry. A type without the inbox takes
// the batched remote run's one-transaction path: its pushes are sent and the devices marked used.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { authenticate } from 'mailauth';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/eventually.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';
import { startDnsServer, type DnsServer } from '../support/dns-server.ts';
import { startApnsPeer, type ApnsPeer } from '../support/apns-peer.ts';
import { startFcmPeer, type FcmPeer } from '../support/fcm-peer.ts';
import { startWebPushService, type TestSubscription, type WebPushService } from '../support/web-push-service.ts';

const apnsKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const fcmKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const apnsSettings = {
  team_id: 'TEAM123456',
  key_id: 'KEYID12345',
  bundle_id: 'com.acme.shop',
  environment: 'sandbox',
  private_key: apnsKey,
};
const serviceAccount = {
  type: 'service_account',
  project_id: 'acme-shop',
  private_key_id: 'k1',
  private_key: fcmKey,
  client_email: 'herald@acme-shop.iam.gserviceaccount.com',
  token_uri: 'https://oauth2.googleapis.com/token',
};
const annToken = 'a1'.repeat(32);
const bobToken = 'fcm-token-bob-0001';

let app: TestApp;
let smtp: SmtpPeer;
let dns: DnsServer;
let apns: ApnsPeer;
let fcm: FcmPeer;
let pushService: WebPushService;
let acme: TenantFixture;
let cySubscription: TestSubscription;
const contactIds: Record<string, string> = {};

async function api(method: string, path: string, body?: unknown, token = acme.serviceKey) {
  const res = await app.request(method, path, { token, body });
  if (res.status >= 400) throw new Error(`${method} ${path} -> ${res.status} ${res.text}`);
  return res.body;
}

interface EventView {
  status: string;
  deliveries: Array<{
    channel: string;
    status: string;
    reason: string | null;
    provider: string | null;
    last_error: string | null;
  }>;
}

async function triggerAndWait(body: Record<string, unknown>): Promise<Record<string, EventView>> {
  const res = await api('POST', '/v1/notifications', { type: 'order_shipped', ...body });
  const out: Record<string, EventView> = {};
  for (const e of res.events as Array<{ event_id: string; external_id: string }>) {
    out[e.external_id] = await eventually(
      async () => {
        const view = (await api('GET', `/v1/notifications/${e.event_id}`)) as EventView;
        if (['queued', 'processing'].includes(view.status))
          throw new Error(`event ${e.event_id} not final: ${JSON.stringify(view)}`);
        return view;
      },
      { timeoutMs: 30_000 },
    );
  }
  return out;
}

const summary = (view: EventView) =>
  view.deliveries.map((d) => `${d.channel}:${d.status}${d.reason ? `:${d.reason}` : ''}`).sort();

/** Reads a contact's SSE stream until `count` notification events arrived. */
async function streamNotifications(
  contactId: string,
  token: string,
  count: number,
  started: (ready: () => void) => void,
) {
  const controller = new AbortController();
  const res = await fetch(`${app.url}/v1/contacts/${contactId}/stream`, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  expect(res.status).toBe(200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const received: Array<{ event: string; data: any }> = [];
  let buffer = '';
  let ready = false;
  const done = (async () => {
    while (received.filter((e) => e.event === 'notification').length < count) {
      const { value, done: end } = await reader.read();
      if (end) break;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event && data) received.push({ event, data: JSON.parse(data) });
        if (event === 'counts' && !ready) {
          ready = true;
          started(() => undefined);
        }
      }
    }
    controller.abort();
    return received;
  })();
  return done;
}

beforeAll(async () => {
  smtp = await startSmtpPeer();
  dns = await startDnsServer();
  apns = await startApnsPeer({
    privateKeyPem: apnsKey,
    teamId: apnsSettings.team_id,
    keyId: apnsSettings.key_id,
    bundleId: apnsSettings.bundle_id,
  });
  fcm = await startFcmPeer({
    privateKeyPem: fcmKey,
    clientEmail: serviceAccount.client_email,
    projectId: serviceAccount.project_id,
  });
  pushService = await startWebPushService();
  app = await startTestApp({
    config: {
      dnsServers: [dns.address],
      providers: {
        apnsSandboxUrl: apns.url,
        apnsProductionUrl: 'https://127.0.0.1:1',
        fcmUrl: fcm.url,
        fcmTokenUrl: fcm.tokenUrl,
        expoUrl: 'https://127.0.0.1:1',
      },
    },
  });
  acme = await createTenantFixture(app, 'Acme');

  // Transports, sender domain (verified against the local DNS), brand, type and templates: all over HTTP.
  await api('PUT', '/v1/email-transport', {
    host: smtp.host,
    port: smtp.port,
    secure: false,
    from_email: 'robot@acme.test',
    from_name: 'Acme Robot',
  });
  const domain = await api('POST', '/v1/sender-domains', { domain: 'mail.acme.test' });
  for (const record of domain.dns_records as Array<{ type: string; name: string; value: string }>)
    if (record.type === 'TXT') dns.publishTxt(record.name, record.value);
  expect((await api('POST', '/v1/sender-domains/mail.acme.test/refresh')).status).toBe('verified');
  await api('PUT', '/v1/brandings/default/values', {
    values: { name: 'Acme Shop', colour: '#ff5500', logo_url: 'https://acme.test/logo.png' },
  });
  await api('PUT', '/v1/brandings/default/sender', {
    from_name: 'Acme Shop',
    from_email: 'news@mail.acme.test',
    reply_to: 'help@acme.test',
  });
  await api('POST', '/v1/notification-types', {
    key: 'order_shipped',
    name: 'Order shipped',
    description: 'Sent when an order leaves the warehouse',
    channel_defaults: { inbox: true, email: true, push: true, web_push: true },
    opt_out: true,
    variables: [{ name: 'order_id', required: true, description: 'the order number' }],
  });
  await api('POST', '/v1/email-templates', {
    notification_type_key: 'order_shipped',
    subject: 'Order {{ order_id }} shipped',
    content: '<p>Hi {{ contact.name }}, your order <b>{{ order_id }}</b> is on its way.</p>',
  });
  await api('POST', '/v1/inbox-templates', {
    notification_type_key: 'order_shipped',
    title: 'Order {{ order_id }} shipped',
    content: 'Your order {{ order_id }} is on its way.',
    action_url: 'https://acme.test/orders/{{ order_id }}',
  });
  await api('PUT', '/v1/push-transport/apns', apnsSettings);
  await api('PUT', '/v1/push-transport/fcm', { service_account: serviceAccount });
  await api('PUT', '/v1/push-transport/webpush', { subject: 'mailto:ops@acme.test' });

  // Three contacts, one device each.
  for (const [externalId, name] of [
    ['ann', 'Ann'],
    ['bob', 'Bob'],
    ['cy', 'Cy'],
  ] as const) {
    contactIds[externalId] = (
      await api('POST', '/v1/contacts', { external_id: externalId, name, email: `${externalId}@example.test` })
    ).id;
  }
  await api('POST', `/v1/contacts/${contactIds.ann}/push-subscriptions`, { provider: 'apns', token: annToken });
  await api('POST', `/v1/contacts/${contactIds.bob}/push-subscriptions`, { provider: 'fcm', token: bobToken });
  const { public_key } = await api('GET', '/v1/web-push/public-key');
  cySubscription = await pushService.subscribe(public_key);
  await api('POST', `/v1/contacts/${contactIds.cy}/push-subscriptions`, {
    provider: 'webpush',
    subscription: { endpoint: cySubscription.endpoint, keys: cySubscription.keys },
  });
});

afterAll(async () => {
  await app?.close();
  await Promise.all([smtp?.close(), dns?.close(), apns?.close(), fcm?.close(), pushService?.close()]);
});

describe('a trigger for three recipients, over every channel', () => {
  let events: Record<string, EventView>;
  let annStream: Array<{ event: string; data: any }>;

  beforeAll(async () => {
    const annContactToken = (await api('POST', '/v1/contacts/tokens', { external_id: 'ann' })).token;
    let markReady!: () => void;
    const connected = new Promise<void>((resolve) => (markReady = resolve));
    const streamDone = streamNotifications(contactIds.ann!, annContactToken, 1, () => markReady());
    await connected;
    events = await triggerAndWait({ recipients: ['ann', 'bob', 'cy'], variables: { order_id: 'A-100' } });
    annStream = await streamDone;
    // Each device sent to is marked used (before the first send, none was).
    for (const name of ['ann', 'bob', 'cy'] as const) {
      const [subscription] = await api('GET', `/v1/contacts/${contactIds[name]}/push-subscriptions`);
      lastUsed[name] = subscription.last_used_at !== null;
    }
  });

  const lastUsed: Record<string, boolean> = {};

  it('delivers every channel each contact has a destination for', () => {
    // Skipped deliveries do not count: every attempted one succeeded.
    expect([events.ann!.status, events.bob!.status, events.cy!.status]).toEqual([
      'delivered',
      'delivered',
      'delivered',
    ]);
    expect(summary(events.ann!)).toEqual([
      'email:sent',
      'inbox:delivered',
      'push:sent',
      'web_push:skipped:no_destination',
    ]);
    expect(summary(events.bob!)).toEqual([
      'email:sent',
      'inbox:delivered',
      'push:sent',
      'web_push:skipped:no_destination',
    ]);
    expect(summary(events.cy!)).toEqual([
      'email:sent',
      'inbox:delivered',
      'push:skipped:no_destination',
      'web_push:sent',
    ]);
    expect(events.ann!.deliveries.find((d) => d.channel === 'push')!.provider).toBe('apns');
    expect(lastUsed).toEqual({ ann: true, bob: true, cy: true });
    expect(events.bob!.deliveries.find((d) => d.channel === 'push')!.provider).toBe('fcm');
  });

  it('puts the item in the inbox and on the connected stream', async () => {
    const item = annStream.find((e) => e.event === 'notification')!.data;
    expect(item).toMatchObject({
      type: 'order_shipped',
      title: 'Order A-100 shipped',
      action_url: 'https://acme.test/orders/A-100',
    });
    const token = (await api('POST', '/v1/contacts/tokens', { external_id: 'ann' })).token;
    const inbox = await api('GET', `/v1/contacts/${contactIds.ann}/notifications`, undefined, token);
    expect(inbox.items.map((i: { id: string }) => i.id)).toContain(item.id);
    expect(inbox.unread_count).toBe(1);
  });

  it('sends a branded, DKIM-signed email with a text part through the tenant transport', async () => {
    const mail = await smtp.waitFor((m) => m.envelope.to.includes('ann@example.test'));
    expect(mail.parsed.subject).toBe('Order A-100 shipped');
    expect(mail.parsed.from?.value[0]).toMatchObject({ address: 'news@mail.acme.test', name: 'Acme Shop' });
    expect(mail.parsed.replyTo?.value[0]?.address).toBe('help@acme.test');
    expect(mail.parsed.html).toContain('#ff5500');
    expect(mail.parsed.html).toContain('https://acme.test/logo.png');
    expect(mail.parsed.html).toContain('<b>A-100</b>');
    expect(mail.parsed.text).toContain('Hi Ann, your order A-100 is on its way.');
    const verdict = await authenticate(mail.raw, {
      resolver: dns.resolve as never,
      trustReceived: true,
      ip: '127.0.0.1',
      helo: 'localhost',
      sender: 'news@mail.acme.test',
      mta: 'mx.example.test',
      disableArc: true,
      disableBimi: true,
    });
    expect(verdict.dkim.results[0]).toMatchObject({ signingDomain: 'mail.acme.test', status: { result: 'pass' } });
  });

  it('reaches the APNs peer (JWT and topic checked by the peer)', () => {
    const sent = apns.received.find((n) => n.token === annToken)!;
    expect(sent.topic).toBe('com.acme.shop');
    expect(sent.payload.aps.alert).toEqual({ title: 'Order A-100 shipped', body: 'Your order A-100 is on its way.' });
  });

  it('reaches the FCM peer (OAuth token exchanged and checked by the peer)', () => {
    const sent = fcm.received.find((n) => n.token === bobToken)!;
    expect(sent.notification).toEqual({ title: 'Order A-100 shipped', body: 'Your order A-100 is on its way.' });
    expect(fcm.tokenExchanges).toBeGreaterThanOrEqual(1);
  });

  it('reaches the web push service, which decrypts the payload (RFC 8291)', async () => {
    const [payload] = await pushService.messages(cySubscription.clientHash);
    expect(JSON.parse(payload!)).toMatchObject({
      title: 'Order A-100 shipped',
      body: 'Your order A-100 is on its way.',
      action_url: 'https://acme.test/orders/A-100',
    });
  });
});

describe('preferences and dead destinations', () => {
  it('an opt-out skips exactly that channel', async () => {
    const bobContactToken = (await api('POST', '/v1/contacts/tokens', { external_id: 'bob' })).token;
    await api(
      'PUT',
      `/v1/contacts/${contactIds.bob}/preferences`,
      { type: 'order_shipped', channel: 'email', enabled: false },
      bobContactToken,
    );
    const before = smtp.messages.length;
    const events = await triggerAndWait({ recipients: ['bob'], variables: { order_id: 'B-200' } });
    expect(summary(events.bob!)).toEqual([
      'email:skipped:opted_out',
      'inbox:delivered',
      'push:sent',
      'web_push:skipped:no_destination',
    ]);
    expect(smtp.messages.slice(before).some((m) => m.envelope.to.includes('bob@example.test'))).toBe(false);
    expect(fcm.received.filter((n) => n.token === bobToken)).toHaveLength(2);
  });

  it('a subscription the web push service reports gone (410) is removed and its delivery fails without retry', async () => {
    await pushService.expire(cySubscription.clientHash);
    const events = await triggerAndWait({ recipients: ['cy'], variables: { order_id: 'C-300' } });
    const webPush = events.cy!.deliveries.find((d) => d.channel === 'web_push')!;
    expect(webPush).toMatchObject({ status: 'failed' });
    expect(webPush.last_error).toMatch(/destination removed/);
    const subscriptions = await api('GET', `/v1/contacts/${contactIds.cy}/push-subscriptions`);
    expect(subscriptions).toEqual([]);
  });

  it('an APNs device reported Unregistered is removed', async () => {
    apns.unregistered.add(annToken);
    const events = await triggerAndWait({ recipients: ['ann'], variables: { order_id: 'D-400' } });
    expect(events.ann!.deliveries.find((d) => d.channel === 'push')).toMatchObject({ status: 'failed' });
    expect(await api('GET', `/v1/contacts/${contactIds.ann}/push-subscriptions`)).toEqual([]);
  });
});

describe('a type without the inbox', () => {
  it('sends its pushes and marks the devices used', async () => {
    await api('POST', '/v1/notification-types', {
      key: 'order_pushed',
      name: 'Order pushed',
      channel_defaults: { inbox: false, email: false, push: true, web_push: true },
      variables: [{ name: 'order_id', required: true }],
    });
    await api('POST', '/v1/inbox-templates', {
      notification_type_key: 'order_pushed',
      title: 'Order {{ order_id }}',
      content: 'On its way.',
    });
    const danToken = 'd4'.repeat(32);
    const dan = (await api('POST', '/v1/contacts', { external_id: 'dan', name: 'Dan' })).id;
    await api('POST', `/v1/contacts/${dan}/push-subscriptions`, { provider: 'apns', token: danToken });
    const eve = (await api('POST', '/v1/contacts', { external_id: 'eve', name: 'Eve' })).id;
    const { public_key } = await api('GET', '/v1/web-push/public-key');
    const eveSubscription = await pushService.subscribe(public_key);
    await api('POST', `/v1/contacts/${eve}/push-subscriptions`, {
      provider: 'webpush',
      subscription: { endpoint: eveSubscription.endpoint, keys: eveSubscription.keys },
    });

    const events = await triggerAndWait({
      type: 'order_pushed',
      recipients: ['dan', 'eve'],
      variables: { order_id: 'E-500' },
    });
    expect(summary(events.dan!)).toEqual(['push:sent', 'web_push:skipped:no_destination']);
    expect(summary(events.eve!)).toEqual(['push:skipped:no_destination', 'web_push:sent']);
    expect(apns.received.filter((n) => n.token === danToken)).toHaveLength(1);
    for (const contact of [dan, eve]) {
      const [subscription] = await api('GET', `/v1/contacts/${contact}/push-subscriptions`);
      expect(subscription.last_used_at).not.toBeNull();
    }
  });
});

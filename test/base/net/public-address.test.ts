// Web push endpoints are chosen by browsers: Herald must never let one point it at its own network.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Server as NetServer } from 'node:net';
import webpush from 'web-push';
import {
  checkedAddresses,
  hostReach,
  isNonPublicAddress,
  NonPublicAddressError,
  publicOnlyLookup,
} from '../../../server/base/net/public-address.ts';
import { startDnsServer, type DnsServer } from '../../support/dns-server.ts';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { testCertificate } from '../../support/tls.ts';
import { sendPush } from '../../../server/channels/push/providers.ts';
import { createTenant } from '../../../server/resources/tenants.ts';
import { createUser } from '../../../server/resources/users.ts';
import { createTenantFixture, sql } from '../../support/fixtures.ts';

// A refusal names the setting that allows private addresses, as a key and as an environment variable.
const ALLOWS_PRIVATE_PUSH =
  'allowPrivatePushEndpoints, HERALD_ALLOW_PRIVATE_PUSH_ENDPOINTS=true, allows private ones; it applies at restart';
const ALLOWS_PRIVATE_SMTP =
  'allowPrivateSmtpHosts, HERALD_ALLOW_PRIVATE_SMTP_HOSTS=true, allows private ones; it applies at restart';

describe('isNonPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.20.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    'fd00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    // The same addresses as a URL normalises them (hex), and the other IPv6 forms that embed IPv4.
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '::7f00:1',
    '64:ff9b::7f00:1',
    '64:ff9b::a9fe:a9fe',
    '2002:7f00:1::1',
    '0:0:0:0:0:ffff:7f00:0001',
  ])('%s is not public', (ip) => expect(isNonPublicAddress(ip)).toBe(true));
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '2002:808:808::1',
  ])('%s is public', (ip) => expect(isNonPublicAddress(ip)).toBe(false));

  // One address of every range of the IANA IPv4 and IPv6 special-purpose address registries.
  it.each([
    ['0.1.2.3', '0.0.0.0/8 this network'],
    ['10.200.0.1', '10.0.0.0/8 private'],
    ['100.127.255.254', '100.64.0.0/10 shared address space'],
    ['127.8.8.8', '127.0.0.0/8 loopback'],
    ['169.254.0.1', '169.254.0.0/16 link local'],
    ['172.31.255.254', '172.16.0.0/12 private'],
    ['192.0.0.8', '192.0.0.0/24 IETF protocol assignments'],
    ['192.0.0.1', '192.0.0.0/29 DS-Lite'],
    ['192.0.0.170', '192.0.0.170/31 NAT64/DNS64 discovery'],
    ['192.0.2.1', '192.0.2.0/24 documentation'],
    ['192.31.196.1', '192.31.196.0/24 AS112-v4'],
    ['192.52.193.1', '192.52.193.0/24 AMT'],
    ['192.88.99.1', '192.88.99.0/24 6to4 relay anycast'],
    ['192.168.0.1', '192.168.0.0/16 private'],
    ['192.175.48.1', '192.175.48.0/24 direct delegation AS112'],
    ['198.19.0.1', '198.18.0.0/15 benchmarking'],
    ['198.51.100.1', '198.51.100.0/24 documentation'],
    ['203.0.113.1', '203.0.113.0/24 documentation'],
    ['240.0.0.1', '240.0.0.0/4 reserved'],
    ['255.255.255.255', 'limited broadcast'],
    ['::1', '::1/128 loopback'],
    ['::', '::/128 unspecified'],
    ['::ffff:192.168.0.1', '::ffff:0:0/96 IPv4-mapped'],
    ['64:ff9b::c0a8:1', '64:ff9b::/96 IPv4-IPv6 translation (of a private address)'],
    ['64:ff9b:1::1', '64:ff9b:1::/48 local-use IPv4/IPv6 translation'],
    ['::ffff:0:1.2.3.4', '::ffff:0:0:0/96 IPv4-translated'],
    ['100::1', '100::/64 discard-only'],
    ['2001::1', '2001::/32 Teredo'],
    ['2001:1::1', '2001::/23 IETF protocol assignments'],
    ['2001:2::1', '2001:2::/48 benchmarking'],
    ['2001:3::1', '2001:3::/32 AMT'],
    ['2001:4:112::1', '2001:4:112::/48 AS112-v6'],
    ['2001:10::1', '2001:10::/28 deprecated ORCHID'],
    ['2001:20::1', '2001:20::/28 ORCHIDv2'],
    ['2001:30::1', '2001:30::/28 drone remote ID'],
    ['2001:db8::1', '2001:db8::/32 documentation'],
    ['2002:c0a8:1::1', '2002::/16 6to4 (of a private address)'],
    ['2620:4f:8000::1', '2620:4f:8000::/48 direct delegation AS112'],
    ['3fff::1', '3fff::/20 documentation'],
    ['5f00::1', '5f00::/16 segment routing SIDs'],
    ['fc00::1', 'fc00::/7 unique local'],
    ['fe80::1', 'fe80::/10 link-local'],
    ['ff02::1', 'ff00::/8 multicast'],
  ])('%s (%s) is not public', (ip) => expect(isNonPublicAddress(ip)).toBe(true));
});

describe('publicOnlyLookup', () => {
  it('refuses a name that resolves only to loopback', async () => {
    const error = await new Promise<Error | null>((resolve) => publicOnlyLookup('localhost', {}, (e) => resolve(e)));
    expect(error?.message).toMatch(/non-public/);
  });
});

describe('checkedAddresses (resolving once, through config.dnsServers)', () => {
  let dns: DnsServer;
  const asked = (name: string) => dns.queries.filter((q) => q.name === name).length;
  beforeAll(async () => {
    dns = await startDnsServer();
  });
  afterAll(async () => {
    await dns?.close();
  });

  it('answers the public addresses of a name that has private ones too, in one lookup per family', async () => {
    dns.addresses.set('mixed.guard.test', [
      '93.184.215.14',
      '10.0.0.7',
      '2606:2800:21f:cb07:6820:80da:af6b:8b2c',
      '::1',
    ]);
    const found = await checkedAddresses('mixed.guard.test', { dnsServers: [dns.address] });
    expect(found.map((a) => a.address).sort()).toEqual(['2606:2800:21f:cb07:6820:80da:af6b:8b2c', '93.184.215.14']);
    expect(asked('mixed.guard.test')).toBe(2); // A and AAAA
  });

  it('refuses a name with only non-public addresses, unless private ones are allowed', async () => {
    dns.addresses.set('inside.guard.test', ['169.254.169.254', 'fd00::1']);
    await expect(checkedAddresses('inside.guard.test', { dnsServers: [dns.address] })).rejects.toBeInstanceOf(
      NonPublicAddressError,
    );
    const allowed = await checkedAddresses('inside.guard.test', { dnsServers: [dns.address], allowPrivate: true });
    expect(allowed.map((a) => a.address).sort()).toEqual(['169.254.169.254', 'fd00::1']);
  });

  it('refuses localhost and non-public literals without asking DNS, and takes a public literal as it is', async () => {
    const before = dns.queries.length;
    for (const host of ['localhost', 'mail.localhost', 'LOCALHOST.', '127.0.0.1', '[::ffff:7f00:1]', '[64:ff9b:1::1]'])
      await expect(checkedAddresses(host, { dnsServers: [dns.address] }), host).rejects.toBeInstanceOf(
        NonPublicAddressError,
      );
    expect(await checkedAddresses('[2606:4700::1111]', { dnsServers: [dns.address] })).toEqual([
      { address: '2606:4700::1111', family: 6 },
    ]);
    expect(dns.queries.length).toBe(before);
  });

  it('tells a registration check a public host, a non-public one and one that does not resolve apart', async () => {
    dns.addresses.set('public.reach.test', ['93.184.215.14']);
    dns.addresses.set('mixed.reach.test', ['93.184.215.14', '10.0.0.7']);
    const options = { dnsServers: [dns.address] };
    expect(await hostReach('public.reach.test', options)).toBe('public');
    expect(await hostReach('mixed.reach.test', options)).toBe('non_public');
    expect(await hostReach('localhost', options)).toBe('non_public');
    expect(await hostReach('[::1]', options)).toBe('non_public');
    expect(await hostReach('gone.reach.test', options)).toBe('unresolved');
  });

  it('fails a name that does not resolve as a DNS failure (tried again later), not as a refusal', async () => {
    const failure = await checkedAddresses('gone.guard.test', { dnsServers: [dns.address] }).catch((e: unknown) => e);
    expect(failure).not.toBeInstanceOf(NonPublicAddressError);
    expect(failure).toMatchObject({ code: 'ENOTFOUND' });
  });
});

describe('sending web push with allowPrivatePushEndpoints off (the production default)', () => {
  let app: TestApp;
  let target: Server;
  let hits = 0;
  let connections = 0;
  let port = 0;

  beforeAll(async () => {
    const { cert, key, caFile } = testCertificate();
    target = createServer({ cert, key }, (_req, res) => {
      hits++;
      res.writeHead(201).end();
    });
    target.on('connection', () => connections++);
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    port = (target.address() as AddressInfo).port;
    app = await startTestApp({
      config: { allowPrivatePushEndpoints: false, allowPrivateSmtpHosts: false, providers: { caFile } as never },
    });
  });
  afterAll(async () => {
    await app?.close();
    await new Promise<void>((resolve) => target.close(() => resolve()));
  });

  it('treats an endpoint on a loopback address as dead without calling it', async () => {
    const em = app.runtime.orm.em.fork();
    const user = await createUser(em, { email: 'owner@ssrf.test', password: 'a long password', verified: true });
    const tenant = await createTenant(em, { name: 'Ssrf', ownerUserId: user.id, makeDefault: true });
    const vapid = webpush.generateVAPIDKeys();
    await em.transactional(async (tx) => {
      const { putPushTransport } = await import('../../../server/channels/push/push-transports.ts');
      await putPushTransport(app.runtime, tx, tenant.id, 'webpush', {
        subject: 'mailto:ops@ssrf.test',
        public_key: vapid.publicKey,
        private_key: vapid.privateKey,
      });
    });
    // A browser-like subscription (valid keys) whose endpoint points at Herald's own network.
    const browser = webpush.generateVAPIDKeys();
    const subscription = {
      endpoint: `https://127.0.0.1:${port}/push/abc`,
      keys: { p256dh: browser.publicKey, auth: Buffer.alloc(16, 1).toString('base64url') },
    };
    const outcome = await sendPush(
      app.runtime,
      app.runtime.orm.em.fork(),
      tenant.id,
      { provider: 'webpush', subscription },
      { title: 't', body: 'b' },
    );
    expect(outcome).toMatchObject({ status: 'dead' });
    expect((outcome as { error: string }).error).toMatch(/not a public address/);
    expect((outcome as { error: string }).error).toContain(ALLOWS_PRIVATE_PUSH);
    const byName = await sendPush(
      app.runtime,
      app.runtime.orm.em.fork(),
      tenant.id,
      { provider: 'webpush', subscription: { ...subscription, endpoint: `https://localhost:${port}/push/abc` } },
      { title: 't', body: 'b' },
    );
    expect(byName).toMatchObject({ status: 'dead' });
    // IPv4-mapped IPv6 literals, which URL parsing turns into hex (https://[::ffff:7f00:1]/), are refused too.
    const mapped = await sendPush(
      app.runtime,
      app.runtime.orm.em.fork(),
      tenant.id,
      {
        provider: 'webpush',
        subscription: { ...subscription, endpoint: `https://[::ffff:127.0.0.1]:${port}/push/abc` },
      },
      { title: 't', body: 'b' },
    );
    expect(mapped).toMatchObject({ status: 'dead' });
    // Not even a connection: neither the HTTP/2 handshake nor HTTP/1.1 reached the address.
    expect(hits).toBe(0);
    expect(connections).toBe(0);
  });
});

describe('tenant SMTP hosts with allowPrivateSmtpHosts off (the production default)', () => {
  let app: TestApp;
  let target: NetServer;
  let connections = 0;
  beforeAll(async () => {
    const { createServer: createTcpServer } = await import('node:net');
    target = createTcpServer((socket) => {
      connections++;
      socket.end('220 internal ESMTP\r\n');
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    app = await startTestApp({ config: { allowPrivateSmtpHosts: false, allowPrivateWebhookUrls: false } });
  });
  afterAll(async () => {
    await app?.close();
    await new Promise<void>((resolve) => target.close(() => resolve()));
  });

  it('says a host that does not resolve does not resolve, not that it is private (422)', async () => {
    const fx = await createTenantFixture(app, 'Misspeller');
    const host = 'no-such-host.invalid';
    const contact = await app.request('POST', '/v1/contacts', { token: fx.serviceKey, body: { external_id: 'm1' } });
    expect(contact.status).toBe(201);
    for (const [path, body, field] of [
      ['/v1/email-transport', { host, port: 587, secure: false, from_email: 'a@misspeller.test' }, 'host'],
      ['/v1/webhooks', { url: `https://${host}/hook`, event_types: ['delivery.sent'] }, 'url'],
      ['/v1/http-transport', { url: `https://${host}/hook` }, 'url'],
      [
        `/v1/contacts/${contact.body.id}/chat-destinations`,
        { provider: 'slack', webhook_url: `https://${host}/services/x` },
        'webhook_url',
      ],
    ] as const) {
      const res = await app.request(path.startsWith('/v1/contacts') || path === '/v1/webhooks' ? 'POST' : 'PUT', path, {
        token: fx.serviceKey,
        body,
      });
      expect(res.status, path).toBe(422);
      expect(res.body.detail[0], path).toMatchObject({
        loc: ['body', field],
        msg: expect.stringContaining('does not resolve'),
      });
    }
  });

  it('refuses a transport on a loopback or private host (422), and never connects to one already stored', async () => {
    const fx = await createTenantFixture(app, 'Prober');
    const port = (target.address() as AddressInfo).port;
    for (const host of ['127.0.0.1', 'localhost', '10.0.0.8', '[::ffff:7f00:1]']) {
      const res = await app.request('PUT', '/v1/email-transport', {
        token: fx.serviceKey,
        body: { host, port, secure: false, from_email: 'a@prober.test' },
      });
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'host'], type: 'host_not_allowed' });
      expect(res.body.detail[0].msg).toContain(ALLOWS_PRIVATE_SMTP);
    }
    // A row stored before the setting was turned off (or by DNS changing later): checked again at send time.
    await sql(
      app,
      `INSERT INTO email_transports (tenant_id, host, port, secure, from_email) VALUES ($1, '127.0.0.1', $2, false, 'a@prober.test')`,
      [fx.tenantId, port],
    );
    const test = await app.request('POST', '/v1/email-transport/test', {
      token: fx.serviceKey,
      body: { to: 'x@example.test' },
    });
    expect(test.body).toMatchObject({ ok: false, error: expect.stringContaining(ALLOWS_PRIVATE_SMTP) });
    const { sendTenantEmail } = await import('../../../server/channels/email/transport.ts');
    const sent = await sendTenantEmail(app.runtime, app.runtime.orm.em.fork(), fx.tenantId, {
      to: 'x@example.test',
      subject: 's',
      html: '<p>b</p>',
      text: 'b',
    });
    expect(sent).toMatchObject({ status: 'failed', retryable: false });
    expect((sent as { error: string }).error).toContain(ALLOWS_PRIVATE_SMTP);
    expect(connections).toBe(0);
  });
});

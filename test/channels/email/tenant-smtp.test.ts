// A tenant's SMTP host goes through the SSRF guard once per connection, and the connection goes to the
// address the guard checked: a name that answers a public address when the transport is set and
// loopback when mail goes (DNS rebinding) reaches nothing, while allowPrivateSmtpHosts still lets a
// private relay through; TLS (STARTTLS and implicit) still verifies the host name, not the address.
// Real parts: the test DNS server (config.dnsServers), SMTP peers on loopback, real certificates.
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../server/base/ids.ts';
import { sendTenantEmail } from '../../../server/channels/email/transport.ts';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { startDnsServer, type DnsServer } from '../../support/dns-server.ts';
import { createTenantFixture, sql, type TenantFixture } from '../../support/fixtures.ts';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer.ts';
import { certificateFor, testCertificate } from '../../support/tls.ts';
import { runTempDir } from '../../support/tmp.ts';

const ALLOWS_PRIVATE_SMTP =
  'allowPrivateSmtpHosts, HERALD_ALLOW_PRIVATE_SMTP_HOSTS=true, allows private ones; it applies at restart';
/** A public unicast address (no special-purpose range); nothing in these tests connects to it. */
const PUBLIC_ADDRESS = '93.184.215.14';
const NAMED_HOST = 'mail.named.test';
const RELAY = { user: 'relay', pass: 'relay-pass-7d2a' };

/** A transport row stored as is, as one set before its host's DNS changed (or before the setting did). */
const STORE_TRANSPORT = `INSERT INTO email_transports (tenant_id, host, port, secure, from_email)
  VALUES ($1, $2, $3, false, 'robot@tenant.test')`;

const mail = { to: 'ann@example.test', subject: 'Shipped', html: '<p>Shipped</p>', text: 'Shipped' };

let dns: DnsServer;
/** Tenant hosts must be public (the production default); the install's own SMTP is `installPeer`. */
let strict: TestApp;
/** allowPrivateSmtpHosts, and a CA file that trusts NAMED_HOST's certificate too. */
let lenient: TestApp;
let installPeer: SmtpPeer;
const peers: SmtpPeer[] = [];

async function peer(options: Parameters<typeof startSmtpPeer>[0] = {}): Promise<SmtpPeer> {
  const started = await startSmtpPeer(options);
  peers.push(started);
  return started;
}

/** Lookups of `name` the DNS server answered, by record type. */
function lookups(name: string): { A: number; AAAA: number } {
  const asked = dns.queries.filter((q) => q.name === name);
  return { A: asked.filter((q) => q.type === 'A').length, AAAA: asked.filter((q) => q.type === 'AAAA').length };
}

async function putTransport(
  app: TestApp,
  fx: TenantFixture,
  body: { host: string; port: number; secure?: boolean; username?: string; password?: string },
) {
  return app.request('PUT', '/v1/email-transport', {
    token: fx.serviceKey,
    body: { secure: false, from_email: 'robot@tenant.test', ...body },
  });
}

async function testSend(app: TestApp, fx: TenantFixture) {
  const res = await app.request('POST', '/v1/email-transport/test', {
    token: fx.serviceKey,
    body: { to: 'ops@example.test' },
  });
  expect(res.status, res.text).toBe(200);
  return res.body as { ok: boolean; error?: string; message_id?: string };
}

const named = certificateFor(NAMED_HOST);

beforeAll(async () => {
  dns = await startDnsServer();
  installPeer = await peer();
  strict = await startTestApp({
    config: { allowPrivateSmtpHosts: false, dnsServers: [dns.address], smtpUrl: installPeer.url },
  });
  const caFile = join(runTempDir('herald-tenant-smtp-'), 'ca.pem');
  writeFileSync(caFile, testCertificate().cert + named.cert);
  lenient = await startTestApp({
    config: { allowPrivateSmtpHosts: true, dnsServers: [dns.address], providers: { caFile } as never },
  });
});

afterAll(async () => {
  // The apps first: their pooled SMTP connections must close before the servers can.
  await strict?.close();
  await lenient?.close();
  for (const started of peers) await started.close();
  await dns?.close();
});

describe('a tenant SMTP host with allowPrivateSmtpHosts off', () => {
  it('that answered a public address when set and loopback when mail goes gets no connection to loopback', async () => {
    const target = await peer();
    const fx = await createTenantFixture(strict, 'Rebinder');
    const host = 'relay.rebind.test';
    dns.addresses.set(host, [PUBLIC_ADDRESS]);
    const put = await putTransport(strict, fx, { host, port: target.port });
    expect(put.status, put.text).toBe(200);
    expect(lookups(host).A).toBeGreaterThan(0); // checked through the configured DNS server

    dns.addresses.set(host, ['127.0.0.1']);
    expect(await testSend(strict, fx)).toEqual({
      ok: false,
      transport: 'tenant',
      error: expect.stringContaining(ALLOWS_PRIVATE_SMTP),
    });
    const sent = await sendTenantEmail(strict.runtime, strict.runtime.orm.em.fork(), fx.tenantId, mail);
    expect(sent).toMatchObject({ status: 'failed', retryable: false });
    expect((sent as { error: string }).error).toContain(ALLOWS_PRIVATE_SMTP);
    expect(target.connectionsOpened).toBe(0);
    expect(target.messages).toHaveLength(0);
  });

  it('retries a name that does not resolve for now, rather than refusing it for good', async () => {
    const fx = await createTenantFixture(strict, 'Unresolved');
    // Set while its name resolved; the name has since gone from DNS (NXDOMAIN from the test server).
    await sql(strict, STORE_TRANSPORT, [fx.tenantId, 'gone.rebind.test', 25]);
    const sent = await sendTenantEmail(strict.runtime, strict.runtime.orm.em.fork(), fx.tenantId, mail);
    expect(sent).toMatchObject({ status: 'failed', retryable: true, error: expect.stringContaining('ENOTFOUND') });
    expect((sent as { error: string }).error).not.toContain(ALLOWS_PRIVATE_SMTP);
  });

  it("never lends a tenant the install's own connections to the same server", async () => {
    // The install's SMTP (trusted, on loopback) has a connection open; a tenant row naming the very
    // same server, stored behind the check's back, still goes through the guard and is refused.
    const own = await sendTenantEmail(strict.runtime, strict.runtime.orm.em.fork(), newId(), mail);
    expect(own.status).toBe('sent');
    const opened = installPeer.connectionsOpened;
    expect(installPeer.openConnections).toBe(1);
    const fx = await createTenantFixture(strict, 'Borrower');
    await sql(strict, STORE_TRANSPORT, [fx.tenantId, '127.0.0.1', installPeer.port]);
    const sent = await sendTenantEmail(strict.runtime, strict.runtime.orm.em.fork(), fx.tenantId, mail);
    expect(sent).toMatchObject({ status: 'failed', retryable: false });
    expect(installPeer.connectionsOpened).toBe(opened);
    expect(installPeer.messages).toHaveLength(1);
  });
});

describe('a tenant SMTP host with allowPrivateSmtpHosts on', () => {
  it('reaches a private relay at the address of one lookup per connection, not per mail', async () => {
    const target = await peer();
    const fx = await createTenantFixture(lenient, 'Private relay');
    const host = 'relay.private.test';
    dns.addresses.set(host, ['127.0.0.1']);
    expect((await putTransport(lenient, fx, { host, port: target.port })).status).toBe(200);
    const before = lookups(host);
    const em = lenient.runtime.orm.em.fork();
    for (let i = 0; i < 3; i++)
      expect((await sendTenantEmail(lenient.runtime, em, fx.tenantId, mail)).status).toBe('sent');
    expect(target.messages).toHaveLength(3);
    expect(target.connectionsOpened).toBe(1);
    expect(lookups(host)).toEqual({ A: before.A + 1, AAAA: before.AAAA + 1 });

    // A new connection (the server ended the last one) resolves the name again.
    target.dropConnections();
    expect((await sendTenantEmail(lenient.runtime, em, fx.tenantId, mail)).status).toBe('sent');
    expect(target.connectionsOpened).toBe(2);
    expect(lookups(host)).toEqual({ A: before.A + 2, AAAA: before.AAAA + 2 });
  });

  it('tries every address the lookup answered, and names each in the error when none answers', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const fx = await createTenantFixture(lenient, 'Down relay');
    dns.addresses.set('down.private.test', ['127.0.0.1', '127.0.0.2']);
    expect((await putTransport(lenient, fx, { host: 'down.private.test', port })).status).toBe(200);
    const sent = await sendTenantEmail(lenient.runtime, lenient.runtime.orm.em.fork(), fx.tenantId, mail);
    expect(sent).toMatchObject({ status: 'failed', retryable: true });
    expect((sent as { error: string }).error).toContain(`127.0.0.1:${port}`);
    expect((sent as { error: string }).error).toContain(`127.0.0.2:${port}`);
  });

  describe.each([
    ['STARTTLS', false],
    ['implicit TLS', true],
  ])('over %s', (mode, secure) => {
    it('verifies the certificate against the host name (and sends it as SNI), not the address', async () => {
      dns.addresses.set(NAMED_HOST, ['127.0.0.1']);
      const right = await peer({ auth: RELAY, certificate: named, implicitTls: secure });
      // The test certificate is trusted and names 127.0.0.1, the address connected to, but not the host.
      const wrong = await peer({ auth: RELAY, certificate: testCertificate(), implicitTls: secure });
      const fx = await createTenantFixture(lenient, `Named ${mode}`);
      const credentials = { username: RELAY.user, password: RELAY.pass };

      expect(
        (await putTransport(lenient, fx, { host: NAMED_HOST, port: right.port, secure, ...credentials })).status,
      ).toBe(200);
      expect(await testSend(lenient, fx)).toMatchObject({ ok: true });
      const received = await right.waitFor(() => true);
      expect(received).toMatchObject({ secure: true, user: RELAY.user, servername: NAMED_HOST });

      expect(
        (await putTransport(lenient, fx, { host: NAMED_HOST, port: wrong.port, secure, ...credentials })).status,
      ).toBe(200);
      const refused = await testSend(lenient, fx);
      expect(refused.ok).toBe(false);
      expect(refused.error).toContain(`${mode === 'STARTTLS' ? 'STARTTLS' : 'TLS'} with ${NAMED_HOST}:${wrong.port}`);
      expect(refused.error).toMatch(/does not match certificate's altnames/);
      expect(wrong.authAttempts).toBe(0);
      expect(wrong.messages).toHaveLength(0);
    });
  });
});

// Sender domains: DKIM key generation, the DNS record to publish, real DNS checks against a local DNS
// server, and DKIM-signed mail verified by an independent verifier (mailauth).
import { createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate } from 'mailauth';
import { startTestApp, type TestApp } from '../../support/app.ts';
import { startDnsServer, type DnsServer } from '../../support/dns-server.ts';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer.ts';
import {
  addUser,
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  type TenantFixture,
} from '../../support/fixtures.ts';
import { query, queryOne } from '../../../server/base/db/sql.ts';
import { KeyRing } from '../../../server/base/crypto/keyring.ts';
import { generateKey } from '../../../server/base/crypto/keyring.ts';
import { dkimSigningFor, recheckSenderDomains } from '../../../server/channels/email/sender-domains.ts';
import { dkimKeyAad } from '../../../server/base/crypto/aad.ts';
import { SENDER_DOMAIN_RECHECK_MS, senderDomainsRecheckJob } from '../../../server/jobs/sender-domains-recheck.ts';

let app: TestApp;
let dnsServer: DnsServer;
let smtp: SmtpPeer;
let acme: TenantFixture;
let globex: TenantFixture;
let acmeAdmin: string;

beforeAll(async () => {
  dnsServer = await startDnsServer();
  smtp = await startSmtpPeer();
  app = await startTestApp({ config: { dnsServers: [dnsServer.address] } });
  [acme, globex] = await Promise.all([createTenantFixture(app, 'Acme'), createTenantFixture(app, 'Globex')]);
  acmeAdmin = (await addUser(app, acme.tenantId, 'admin', true)).token;
});
afterAll(async () => {
  await app?.close();
  await smtp?.close();
  await dnsServer?.close();
});

let counter = 0;
const uniqueDomain = () => `mail${++counter}.acme.test`;

async function register(fx: TenantFixture, domain = uniqueDomain()) {
  const res = await app.request('POST', '/v1/sender-domains', { token: fx.serviceKey, body: { domain } });
  expect(res.status).toBe(201);
  return res.body;
}

/** Publishes a registered domain's DKIM record in the test DNS server, as the tenant's DNS admin would. */
function publish(domain: { dns_records: Array<{ name: string; value: string }> }) {
  const record = domain.dns_records[0]!;
  dnsServer.publishTxt(record.name, record.value);
}

describe('POST /v1/sender-domains', () => {
  it('generates an RSA-2048 DKIM key and answers the TXT record to publish', async () => {
    const res = await app.request('POST', '/v1/sender-domains', {
      token: acmeAdmin,
      body: { domain: 'news.acme.test' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      domain: 'news.acme.test',
      status: 'pending',
      dns_records: [
        {
          type: 'TXT',
          name: expect.stringMatching(/^herald[0-9a-f]{8}\._domainkey\.news\.acme\.test$/),
          value: expect.stringMatching(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]+$/),
        },
      ],
      last_checked_at: null,
      last_error: null,
    });
    const p = res.body.dns_records[0].value.split('p=')[1];
    const key = createPublicKey({ key: Buffer.from(p, 'base64'), format: 'der', type: 'spki' });
    expect(key.asymmetricKeyType).toBe('rsa');
    expect(key.asymmetricKeyDetails?.modulusLength).toBe(2048);
  });

  it('keeps the private key encrypted, bound to its row, and matching the published key', async () => {
    const domain = await register(acme);
    const row = await queryOne<{ id: string; dkim_private_key_ciphertext: string }>(
      app.runtime.orm.em.fork(),
      `SELECT id, dkim_private_key_ciphertext FROM sender_domains WHERE tenant_id = $1 AND domain = $2`,
      [acme.tenantId, domain.domain],
    );
    expect(row!.dkim_private_key_ciphertext).not.toContain('PRIVATE KEY');
    const pem = app.runtime.keyRing.decrypt(row!.dkim_private_key_ciphertext, dkimKeyAad(row!.id));
    const derived = createPublicKey(pem).export({ type: 'spki', format: 'der' }).toString('base64');
    expect(domain.dns_records[0].value).toBe(`v=DKIM1; k=rsa; p=${derived}`);
    expect(() => app.runtime.keyRing.decrypt(row!.dkim_private_key_ciphertext, dkimKeyAad('another-row'))).toThrow();
  });

  it('normalises the name: case, surrounding space, trailing dot, IDN', async () => {
    expect((await register(acme, '  Upper.ACME.test. ')).domain).toBe('upper.acme.test');
    expect((await register(acme, 'bücher.acme.test')).domain).toBe('xn--bcher-kva.acme.test');
  });

  it('answers 409 for a domain the tenant already registered, and lets another tenant register it', async () => {
    const domain = await register(acme);
    const dup = await app.request('POST', '/v1/sender-domains', {
      token: acme.serviceKey,
      body: { domain: domain.domain.toUpperCase() },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('already_exists');
    const other = await register(globex, domain.domain);
    expect(other.dns_records[0].name).not.toBe(domain.dns_records[0].name);
  });

  it('answers 422 for something that is not a domain name', async () => {
    for (const domain of [
      'localhost',
      'not a domain',
      '-bad.acme.test',
      'bad-.acme.test',
      '10.0.0.1',
      'a..b',
      `${'x'.repeat(64)}.test`,
      '',
      42,
    ]) {
      expectValidationError(
        await app.request('POST', '/v1/sender-domains', { token: acme.serviceKey, body: { domain } }),
        ['body', 'domain'],
      );
    }
    expectValidationError(await app.request('POST', '/v1/sender-domains', { token: acme.serviceKey, body: {} }), [
      'body',
      'domain',
    ]);
    expectValidationError(await app.request('POST', '/v1/sender-domains', { token: acme.serviceKey, rawBody: '{' }), [
      'body',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', '/v1/sender-domains', { domain: 'never.acme.test' });
  });
});

describe('GET /v1/sender-domains', () => {
  it("lists the tenant's domains only", async () => {
    const fx = await createTenantFixture(app, 'Lister');
    const a = await register(fx, 'b.lister.test');
    const b = await register(fx, 'a.lister.test');
    const res = await app.request('GET', '/v1/sender-domains', { token: fx.ownerToken });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([b, a]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', '/v1/sender-domains');
  });
});

describe('GET /v1/sender-domains/{domain}', () => {
  it('answers the domain with its records', async () => {
    const domain = await register(acme);
    const res = await app.request('GET', `/v1/sender-domains/${domain.domain.toUpperCase()}`, {
      token: acme.serviceKey,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(domain);
  });

  it("answers 404 for an unknown and another tenant's domain", async () => {
    expect((await app.request('GET', '/v1/sender-domains/unknown.acme.test', { token: acme.serviceKey })).status).toBe(
      404,
    );
    const theirs = await register(globex, 'only.globex.test');
    const res = await app.request('GET', `/v1/sender-domains/${theirs.domain}`, { token: acme.serviceKey });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Sender domain not found', code: 'not_found' });
  });

  it('answers 422 for a malformed domain', async () => {
    expectValidationError(await app.request('GET', '/v1/sender-domains/no_dots', { token: acme.serviceKey }), [
      'path',
      'domain',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'GET', '/v1/sender-domains/news.acme.test');
  });
});

describe('DELETE /v1/sender-domains/{domain}', () => {
  it('removes the domain', async () => {
    const domain = await register(acme);
    const res = await app.request('DELETE', `/v1/sender-domains/${domain.domain}`, { token: acmeAdmin });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect((await app.request('GET', `/v1/sender-domains/${domain.domain}`, { token: acme.serviceKey })).status).toBe(
      404,
    );
  });

  it("answers 404 for an unknown and another tenant's domain, which stays", async () => {
    expect(
      (await app.request('DELETE', '/v1/sender-domains/unknown.acme.test', { token: acme.serviceKey })).status,
    ).toBe(404);
    const theirs = await register(globex);
    expect(
      (await app.request('DELETE', `/v1/sender-domains/${theirs.domain}`, { token: acme.serviceKey })).status,
    ).toBe(404);
    expect((await app.request('GET', `/v1/sender-domains/${theirs.domain}`, { token: globex.serviceKey })).status).toBe(
      200,
    );
  });

  it('answers 422 for a malformed domain', async () => {
    expectValidationError(await app.request('DELETE', '/v1/sender-domains/%20', { token: acme.serviceKey }), [
      'path',
      'domain',
    ]);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'DELETE', '/v1/sender-domains/news.acme.test');
  });
});

describe('POST /v1/sender-domains/{domain}/refresh', () => {
  it('moves the domain to verified once the record is published in DNS', async () => {
    const domain = await register(acme);
    publish(domain);
    const res = await app.request('POST', `/v1/sender-domains/${domain.domain}/refresh`, { token: acme.serviceKey });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      domain: domain.domain,
      status: 'verified',
      last_error: null,
      last_checked_at: expect.any(String),
    });
    expect(
      (await app.request('GET', `/v1/sender-domains/${domain.domain}`, { token: acme.serviceKey })).body.status,
    ).toBe('verified');
  });

  it('moves the domain to failed while the record is missing, with the reason', async () => {
    const domain = await register(acme);
    const res = await app.request('POST', `/v1/sender-domains/${domain.domain}/refresh`, { token: acmeAdmin });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'failed',
      last_error: expect.stringContaining('No TXT record found'),
      last_checked_at: expect.any(String),
    });
  });

  it('fails a record that holds another key, and a verified domain whose record was replaced', async () => {
    const domain = await register(acme);
    publish(domain);
    expect(
      (await app.request('POST', `/v1/sender-domains/${domain.domain}/refresh`, { token: acme.serviceKey })).body
        .status,
    ).toBe('verified');
    const other = await register(globex);
    dnsServer.publishTxt(domain.dns_records[0].name, other.dns_records[0].value);
    const res = await app.request('POST', `/v1/sender-domains/${domain.domain}/refresh`, { token: acme.serviceKey });
    expect(res.body).toMatchObject({
      status: 'failed',
      last_error: expect.stringContaining("does not hold this domain's public key"),
    });
  });

  it('keeps a verified domain verified through a DNS server failure, and fails a pending one', async () => {
    const verified = await register(acme);
    publish(verified);
    await app.request('POST', `/v1/sender-domains/${verified.domain}/refresh`, { token: acme.serviceKey });
    dnsServer.failing.add(verified.dns_records[0].name);
    const kept = await app.request('POST', `/v1/sender-domains/${verified.domain}/refresh`, { token: acme.serviceKey });
    expect(kept.body).toMatchObject({ status: 'verified', last_error: expect.stringContaining('DNS lookup') });
    const pending = await register(acme);
    dnsServer.failing.add(pending.dns_records[0].name);
    const failed = await app.request('POST', `/v1/sender-domains/${pending.domain}/refresh`, {
      token: acme.serviceKey,
    });
    expect(failed.body).toMatchObject({ status: 'failed', last_error: expect.stringContaining('DNS lookup') });
  });

  it("answers 404 for an unknown and another tenant's domain", async () => {
    expect(
      (await app.request('POST', '/v1/sender-domains/unknown.acme.test/refresh', { token: acme.serviceKey })).status,
    ).toBe(404);
    const theirs = await register(globex);
    expect(
      (await app.request('POST', `/v1/sender-domains/${theirs.domain}/refresh`, { token: acme.serviceKey })).status,
    ).toBe(404);
    expect(
      (await app.request('GET', `/v1/sender-domains/${theirs.domain}`, { token: globex.serviceKey })).body
        .last_checked_at,
    ).toBeNull();
  });

  it('answers 422 for a malformed domain', async () => {
    expectValidationError(
      await app.request('POST', '/v1/sender-domains/bad!.test/refresh', { token: acme.serviceKey }),
      ['path', 'domain'],
    );
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, acme, 'POST', '/v1/sender-domains/news.acme.test/refresh');
  });
});

describe('DKIM signing (dkimSigningFor)', () => {
  let verified: { domain: string; dns_records: Array<{ name: string; value: string }> };

  beforeAll(async () => {
    verified = await register(acme, 'signed.acme.test');
    publish(verified);
    const res = await app.request('POST', '/v1/sender-domains/signed.acme.test/refresh', { token: acme.serviceKey });
    expect(res.body.status).toBe('verified');
  });

  const verify = (raw: string) =>
    authenticate(raw, {
      resolver: dnsServer.resolve as never,
      trustReceived: true,
      ip: '127.0.0.1',
      helo: 'localhost',
      sender: 'news@signed.acme.test',
      mta: 'mx.receiver.test',
      disableArc: true,
      disableBimi: true,
    });

  it('signs mail from a verified domain so that an independent verifier passes it against the published record', async () => {
    const dkim = await dkimSigningFor(app.runtime, app.runtime.orm.em.fork(), acme.tenantId, 'news@signed.acme.test');
    expect(dkim).toMatchObject({
      domainName: 'signed.acme.test',
      keySelector: verified.dns_records[0]!.name.split('.')[0],
    });
    await app.runtime.smtp.send(
      { host: smtp.host, port: smtp.port, secure: false },
      {
        from: 'Acme <news@signed.acme.test>',
        to: 'reader@example.test',
        subject: 'Signed',
        text: 'Hello',
        html: '<p>Hello</p>',
        dkim: dkim!,
      },
    );
    const mail = await smtp.waitFor((m) => m.parsed.subject === 'Signed');
    expect(mail.raw).toMatch(/^DKIM-Signature: /m);
    const result = await verify(mail.raw);
    expect(result.dkim.results[0]).toMatchObject({ signingDomain: 'signed.acme.test', status: { result: 'pass' } });
    // The same message with its body or a signed header changed does not pass: the verifier really checks.
    const body = await verify(mail.raw.replace('Hello', 'Hellp'));
    expect(body.dkim.results[0]!.status.result).not.toBe('pass');
    const header = await verify(mail.raw.replace('Subject: Signed', 'Subject: Signet'));
    expect(header.dkim.results[0]!.status.result).toBe('fail');
  });

  it('signs mail from a subdomain of a verified domain with the parent domain', async () => {
    const dkim = await dkimSigningFor(
      app.runtime,
      app.runtime.orm.em.fork(),
      acme.tenantId,
      'alerts@eu.signed.acme.test',
    );
    expect(dkim?.domainName).toBe('signed.acme.test');
  });

  it('does not sign for unverified, unknown or other tenants’ domains', async () => {
    const em = app.runtime.orm.em.fork();
    const pending = await register(acme);
    expect(await dkimSigningFor(app.runtime, em, acme.tenantId, `x@${pending.domain}`)).toBeNull();
    expect(await dkimSigningFor(app.runtime, em, acme.tenantId, 'x@elsewhere.test')).toBeNull();
    expect(await dkimSigningFor(app.runtime, em, globex.tenantId, 'news@signed.acme.test')).toBeNull();
    expect(await dkimSigningFor(app.runtime, em, acme.tenantId, 'not-an-address')).toBeNull();
  });

  it('answers null and logs a warning (without the key) when the private key is unreadable', async () => {
    const em = app.runtime.orm.em.fork();
    const domain = await register(acme, 'lost-key.acme.test');
    publish(domain);
    await app.request('POST', '/v1/sender-domains/lost-key.acme.test/refresh', { token: acme.serviceKey });
    const [row] = await query<{ id: string }>(
      em,
      `SELECT id FROM sender_domains WHERE tenant_id = $1 AND domain = $2`,
      [acme.tenantId, 'lost-key.acme.test'],
    );
    const gone = new KeyRing({ active: 'gone', keys: { gone: generateKey() } });
    await query(em, `UPDATE sender_domains SET dkim_private_key_ciphertext = $2 WHERE id = $1`, [
      row!.id,
      gone.encrypt('-----BEGIN PRIVATE KEY-----', dkimKeyAad(row!.id)),
    ]);
    expect(await dkimSigningFor(app.runtime, em, acme.tenantId, 'x@lost-key.acme.test')).toBeNull();
    const warning = app.logs.find((l) => l.includes('DKIM key of a sender domain is unreadable'));
    expect(warning).toContain('lost-key.acme.test');
    expect(warning).not.toContain('PRIVATE KEY');
  });
});

describe('the scheduled re-check (jobs/sender-domains-recheck.ts)', () => {
  const statusOf = async (domain: string) =>
    (await queryOne<{ status: string; last_error: string | null; last_checked_at: Date | null }>(
      app.runtime.orm.em.fork(),
      `SELECT status, last_error, last_checked_at FROM sender_domains WHERE tenant_id = $1 AND domain = $2`,
      [acme.tenantId, domain],
    ))!;
  const recheckAll = () => recheckSenderDomains(app.runtime, app.runtime.orm.em.fork(), { staleMs: 0, limit: 10_000 });

  it('leaves a pending domain pending until its record appears, then verifies it by itself', async () => {
    const domain = await register(acme);
    await recheckAll();
    expect(await statusOf(domain.domain)).toMatchObject({
      status: 'pending',
      last_error: expect.stringContaining('No TXT record'),
      last_checked_at: expect.anything(),
    });
    publish(domain);
    await recheckAll();
    expect(await statusOf(domain.domain)).toMatchObject({ status: 'verified', last_error: null });
    expect(
      app.logs.some(
        (l) => l.includes('sender domain re-checked') && l.includes(domain.domain) && l.includes('"to":"verified"'),
      ),
    ).toBe(true);
  });

  it('keeps a verified domain through a DNS failure, and fails it once its record is gone (signing stops)', async () => {
    const domain = await register(acme);
    publish(domain);
    await recheckAll();
    const name = domain.dns_records[0].name as string;
    dnsServer.failing.add(name);
    try {
      await recheckAll();
      expect(await statusOf(domain.domain)).toMatchObject({
        status: 'verified',
        last_error: expect.stringContaining('failed'),
      });
    } finally {
      dnsServer.failing.delete(name);
    }
    dnsServer.txt.delete(name);
    await recheckAll();
    expect(await statusOf(domain.domain)).toMatchObject({
      status: 'failed',
      last_error: expect.stringContaining('No TXT record'),
    });
    expect(
      await dkimSigningFor(app.runtime, app.runtime.orm.em.fork(), acme.tenantId, `news@${domain.domain}`),
    ).toBeNull();
  });

  it('looks again only at domains not checked for a day, the least recently checked first, and runs every hour', async () => {
    const domain = await register(acme);
    await recheckAll();
    const checkedAt = (await statusOf(domain.domain)).last_checked_at;
    const recent = await recheckSenderDomains(app.runtime, app.runtime.orm.em.fork(), {
      staleMs: SENDER_DOMAIN_RECHECK_MS,
      limit: 10_000,
    });
    expect(recent.checked).toBe(0);
    expect((await statusOf(domain.domain)).last_checked_at).toEqual(checkedAt);
    expect(senderDomainsRecheckJob.schedule).toBe('41 * * * *');
  });
});

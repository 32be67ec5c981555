// Email failover with two real SMTP peers: the tenant's fallback transport (PUT|GET|DELETE
// /v1/email-transport/fallback) is asked within the same attempt when the primary (or the install's
// SMTP standing in for a missing primary) fails for now: refused connection, 451. A 550 to the
// recipient fails the delivery without asking the fallback. Five failures in a row open the primary's
// circuit (its trail entry says skipped) until, 30 s later on the app's manual clock, it is probed.
// Every relay asked shows in GET /v1/notifications/{id}; no password is ever answered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../server/base/clock.ts';
import { queryOne } from '../../../server/base/db/sql.ts';
import { envelopeKeyId, generateKey, KeyRing } from '../../../server/base/crypto/keyring.ts';
import { rewrapAll } from '../../../server/app/keys.ts';
import { FAILURES_TO_OPEN, OPEN_MS } from '../../../server/channels/failover.ts';
import { startTestApp, type TestApp } from '../../support/app.ts';
import {
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  insertEmailTemplate,
  insertNotificationType,
  sql,
  waitForFinal,
  type TenantFixture,
} from '../../support/fixtures.ts';
import { startSmtpPeer, type SmtpPeer } from '../../support/smtp-peer.ts';
import { eventually } from '../../support/eventually.ts';

const FALLBACK_USER = 'fallback-mailer';
const FALLBACK_PASS = 'fallback-pass-91c3e0d2';
const TYPE = 'order_shipped';

let app: TestApp;
let clock: ManualClock;
/** The install's own SMTP (smtpUrl), for tenants without a primary of their own. */
let install: SmtpPeer;
/** The relay every tenant's primary names unless a test points it elsewhere. */
let primary: SmtpPeer;
/** The fallback relay, which requires credentials (over STARTTLS). */
let fallback: SmtpPeer;
/** A port nothing listens on any more: a primary that is down. */
let downPort: number;
/** Recipients the primary (and the install's SMTP) answer 451 for, while in the set. */
const deferred = new Set<string>();

const relay = (port: number, from: string, credentials = false) => ({
  host: '127.0.0.1',
  port,
  secure: false,
  from_email: from,
  ...(credentials ? { username: FALLBACK_USER, password: FALLBACK_PASS } : {}),
});

beforeAll(async () => {
  install = await startSmtpPeer({ deferRecipients: deferred });
  primary = await startSmtpPeer({ rejectRecipients: ['gone@example.test'], deferRecipients: deferred });
  fallback = await startSmtpPeer({ auth: { user: FALLBACK_USER, pass: FALLBACK_PASS } });
  const closed = await startSmtpPeer();
  downPort = closed.port;
  await closed.close();
  clock = new ManualClock();
  app = await startTestApp({ clock, config: { smtpUrl: install.url, mailFrom: 'Herald <herald@install.test>' } });
});

afterAll(async () => {
  // The app first: its pooled SMTP connections must close before the servers can.
  await app?.close();
  for (const peer of [install, primary, fallback]) await peer?.close();
});

interface Tenant {
  fx: TenantFixture;
  /** Triggers the type for a new contact with this address; the event id. */
  trigger(to: string): Promise<string>;
  /** Triggers, then answers the event once final, and its one delivery. */
  send(to: string): Promise<{ event: any; delivery: any }>;
}

/** A tenant with an email type and template, and the given primary and fallback transports. */
async function tenant(name: string, transports: { primaryPort?: number; fallback?: boolean }): Promise<Tenant> {
  const fx = await createTenantFixture(app, name);
  await insertNotificationType(app, fx.tenantId, {
    key: TYPE,
    channels: { inbox: false, email: true, push: false, web_push: false },
  });
  await insertEmailTemplate(app, fx.tenantId, { type: TYPE, subject: 'Shipped', content: '<p>Your order shipped</p>' });
  if (transports.primaryPort !== undefined) {
    const put = await app.request('PUT', '/v1/email-transport', {
      token: fx.serviceKey,
      body: relay(transports.primaryPort, `primary@${name.toLowerCase()}.test`),
    });
    expect(put.status, put.text).toBe(200);
  }
  if (transports.fallback) {
    const put = await app.request('PUT', '/v1/email-transport/fallback', {
      token: fx.serviceKey,
      body: relay(fallback.port, `fallback@${name.toLowerCase()}.test`, true),
    });
    expect(put.status, put.text).toBe(200);
  }
  let contacts = 0;
  const trigger = async (to: string): Promise<string> => {
    const externalId = `c-${++contacts}`;
    await fx.contact(externalId, { email: to });
    const res = await app.request('POST', '/v1/notifications', {
      token: fx.serviceKey,
      body: { type: TYPE, recipients: [externalId] },
    });
    expect(res.status, res.text).toBe(202);
    return res.body.events[0].event_id;
  };
  return {
    fx,
    trigger,
    async send(to) {
      const eventId = await trigger(to);
      await waitForFinal(app, [eventId]);
      const event = (await app.request('GET', `/v1/notifications/${eventId}`, { token: fx.serviceKey })).body;
      expect(event.deliveries).toHaveLength(1);
      return { event, delivery: event.deliveries[0] };
    },
  };
}

const trail = (delivery: { provider_attempts: Array<{ provider: string; outcome: string }> }) =>
  delivery.provider_attempts.map((a) => [a.provider, a.outcome]);

describe('sending with a fallback transport', () => {
  it('sends through a healthy primary and leaves the fallback alone', async () => {
    const ok = await tenant('Steady', { primaryPort: primary.port, fallback: true });
    const { delivery } = await ok.send('ann@steady.example.test');
    expect(delivery).toMatchObject({ status: 'sent', provider: 'smtp', attempts: 1 });
    expect(trail(delivery)).toEqual([['smtp', 'sent']]);
    const mail = await primary.waitFor((m) => m.envelope.to.includes('ann@steady.example.test'));
    expect(mail.parsed.from?.value[0]?.address).toBe('primary@steady.test');
    expect(fallback.messages.filter((m) => m.envelope.to.includes('ann@steady.example.test'))).toHaveLength(0);
  });

  it('sends through the fallback within the same attempt when the primary is down', async () => {
    const t = await tenant('Down', { primaryPort: downPort, fallback: true });
    const { delivery } = await t.send('bob@down.example.test');
    expect(delivery).toMatchObject({ status: 'sent', provider: 'smtp-fallback', attempts: 1, last_error: null });
    expect(trail(delivery)).toEqual([
      ['smtp', 'failed'],
      ['smtp-fallback', 'sent'],
    ]);
    expect(delivery.provider_attempts[0].error).toMatch(/ECONNREFUSED/);
    const mail = await fallback.waitFor((m) => m.envelope.to.includes('bob@down.example.test'));
    // The fallback's own From and credentials: it is a relay of its own.
    expect(mail.parsed.from?.value[0]?.address).toBe('fallback@down.test');
    expect(mail.user).toBe(FALLBACK_USER);
    expect(mail.secure).toBe(true);
    expect(JSON.stringify(delivery)).not.toContain(FALLBACK_PASS);
  });

  it('asks the fallback when the primary answers 451 (try again later)', async () => {
    const t = await tenant('Greylisted', { primaryPort: primary.port, fallback: true });
    deferred.add('cy@grey.example.test');
    try {
      const { delivery } = await t.send('cy@grey.example.test');
      expect(delivery).toMatchObject({ status: 'sent', provider: 'smtp-fallback' });
      expect(trail(delivery)).toEqual([
        ['smtp', 'failed'],
        ['smtp-fallback', 'sent'],
      ]);
      expect(delivery.provider_attempts[0].error).toMatch(/451/);
      await fallback.waitFor((m) => m.envelope.to.includes('cy@grey.example.test'));
    } finally {
      deferred.delete('cy@grey.example.test');
    }
  });

  it('fails a recipient the primary refuses for good (550) without asking the fallback', async () => {
    const t = await tenant('Refused', { primaryPort: primary.port, fallback: true });
    const { delivery } = await t.send('gone@example.test');
    expect(delivery).toMatchObject({ status: 'failed', provider: 'smtp', attempts: 1, next_attempt_at: null });
    expect(trail(delivery)).toEqual([['smtp', 'failed']]);
    expect(delivery.last_error).toMatch(/550|Mailbox unavailable/);
    expect(fallback.messages.filter((m) => m.envelope.to.includes('gone@example.test'))).toHaveLength(0);
  });

  it('without a fallback, fails a down primary for now as before: one relay in the trail', async () => {
    const t = await tenant('Alone', { primaryPort: downPort });
    await t.trigger('dee@alone.example.test');
    const row = await eventually(
      async () =>
        (await queryOne<{
          status: string;
          provider: string | null;
          provider_attempts: Array<{ provider: string; outcome: string }>;
        }>(
          app.runtime.orm.em.fork(),
          `SELECT status, provider, provider_attempts FROM deliveries WHERE tenant_id = $1 AND provider IS NOT NULL`,
          [t.fx.tenantId],
        )) ?? false,
      { message: 'the delivery was never attempted' },
    );
    expect(row.provider).toBe('smtp');
    expect(trail(row)).toEqual([['smtp', 'failed']]);
    expect(row.status).not.toBe('sent');
  });

  it("puts the tenant's fallback behind the install's SMTP when the tenant has no primary", async () => {
    const t = await tenant('Shared', { fallback: true });
    const healthy = await t.send('eve@shared.example.test');
    expect(healthy.delivery).toMatchObject({ status: 'sent', provider: 'smtp-install' });
    const viaInstall = await install.waitFor((m) => m.envelope.to.includes('eve@shared.example.test'));
    expect(viaInstall.parsed.from?.value[0]?.address).toBe('herald@install.test');
    deferred.add('fay@shared.example.test');
    try {
      const { delivery } = await t.send('fay@shared.example.test');
      expect(delivery).toMatchObject({ status: 'sent', provider: 'smtp-fallback' });
      expect(trail(delivery)).toEqual([
        ['smtp-install', 'failed'],
        ['smtp-fallback', 'sent'],
      ]);
      await fallback.waitFor((m) => m.envelope.to.includes('fay@shared.example.test'));
    } finally {
      deferred.delete('fay@shared.example.test');
    }
  });

  it("asks the fallback when the primary's own setup fails: its password refused, or unreadable", async () => {
    const t = await tenant('Misconfigured', { fallback: true });
    // The fallback's own server as primary, with a password it refuses (535): a fault of that relay.
    const put = await app.request('PUT', '/v1/email-transport', {
      token: t.fx.serviceKey,
      body: { ...relay(fallback.port, 'primary@misconfigured.test', true), password: 'not-the-password' },
    });
    expect(put.status, put.text).toBe(200);
    const refused = await t.send('lea@misconfigured.example.test');
    expect(refused.delivery).toMatchObject({ status: 'sent', provider: 'smtp-fallback' });
    expect(trail(refused.delivery)).toEqual([
      ['smtp', 'failed'],
      ['smtp-fallback', 'sent'],
    ]);
    expect(refused.delivery.provider_attempts[0].error).toMatch(/535|auth/i);
    expect(JSON.stringify(refused.event)).not.toContain('not-the-password');

    // A primary password sealed for another row cannot be decrypted: the fallback takes the mail.
    await sql(app, `UPDATE email_transports SET password_ciphertext = $2 WHERE tenant_id = $1 AND slot = 'primary'`, [
      t.fx.tenantId,
      app.runtime.keyRing.encrypt('whatever', `email_transports/${t.fx.tenantId}/fallback/password`),
    ]);
    const unreadable = await t.send('max@misconfigured.example.test');
    expect(unreadable.delivery).toMatchObject({ status: 'sent', provider: 'smtp-fallback' });
    expect(unreadable.delivery.provider_attempts[0]).toMatchObject({
      provider: 'smtp',
      outcome: 'failed',
      error: expect.stringContaining('credentials_unreadable'),
    });
    const shown = await app.request('GET', '/v1/email-transport', { token: t.fx.serviceKey });
    expect(shown.body.credentials_unreadable).toBe(true);
  });

  it('skips with credentials_unreadable when no relay can be used, as without a fallback', async () => {
    const t = await tenant('Locked', { primaryPort: primary.port, fallback: true });
    for (const slot of ['primary', 'fallback'])
      await sql(
        app,
        `UPDATE email_transports SET password_ciphertext = 'hv1.gone.x' WHERE tenant_id = $1 AND slot = $2`,
        [t.fx.tenantId, slot],
      );
    const { delivery } = await t.send('ned@locked.example.test');
    expect(delivery).toMatchObject({ status: 'skipped', reason: 'credentials_unreadable', provider_attempts: [] });
  });

  it('skips a primary whose circuit opened after five failures, and probes it again 30 s later', async () => {
    const t = await tenant('Flaky', { primaryPort: downPort, fallback: true });
    for (let i = 0; i < FAILURES_TO_OPEN; i++) {
      const { delivery } = await t.send(`flaky-${i}@flaky.example.test`);
      expect(trail(delivery)).toEqual([
        ['smtp', 'failed'],
        ['smtp-fallback', 'sent'],
      ]);
    }
    const { delivery: open } = await t.send('flaky-open@flaky.example.test');
    expect(open).toMatchObject({ status: 'sent', provider: 'smtp-fallback' });
    expect(trail(open)).toEqual([
      ['smtp', 'skipped'],
      ['smtp-fallback', 'sent'],
    ]);
    expect(open.provider_attempts[0].error).toMatch(/circuit open/);

    // Another tenant's primary keeps its own circuit.
    const neighbour = await tenant('Neighbour', { primaryPort: primary.port, fallback: true });
    expect(trail((await neighbour.send('hal@neighbour.example.test')).delivery)).toEqual([['smtp', 'sent']]);

    // Still open just before OPEN_MS; the relay comes back meanwhile; asked again (a probe) once
    // OPEN_MS has passed, and trusted after.
    clock.advance(OPEN_MS - 1000);
    expect(trail((await t.send('ivy@flaky.example.test')).delivery)).toEqual([
      ['smtp', 'skipped'],
      ['smtp-fallback', 'sent'],
    ]);
    const repaired = await app.request('PUT', '/v1/email-transport', {
      token: t.fx.serviceKey,
      body: relay(primary.port, 'primary@flaky.test'),
    });
    expect(repaired.status, repaired.text).toBe(200);
    clock.advance(1000);
    const received = primary.messages.length;
    const probe = await t.send('jo@flaky.example.test');
    expect(probe.delivery).toMatchObject({ status: 'sent', provider: 'smtp' });
    expect(trail(probe.delivery)).toEqual([['smtp', 'sent']]);
    await primary.waitFor((m) => m.envelope.to.includes('jo@flaky.example.test'));
    expect(primary.messages.length).toBeGreaterThan(received);
    expect(trail((await t.send('kit@flaky.example.test')).delivery)).toEqual([['smtp', 'sent']]);
  });

  it("does not open the primary's circuit for recipients it greylists (451): the relay itself is up", async () => {
    const t = await tenant('Greylisting', { primaryPort: primary.port, fallback: true });
    const addresses = Array.from({ length: FAILURES_TO_OPEN + 2 }, (_, i) => `grey-${i}@greylisting.example.test`);
    for (const address of addresses) deferred.add(address);
    try {
      for (const address of addresses)
        expect(trail((await t.send(address)).delivery)).toEqual([
          ['smtp', 'failed'],
          ['smtp-fallback', 'sent'],
        ]);
    } finally {
      for (const address of addresses) deferred.delete(address);
    }
    expect(trail((await t.send('lee@greylisting.example.test')).delivery)).toEqual([['smtp', 'sent']]);
  });
});

describe('PUT|GET|DELETE /v1/email-transport/fallback', () => {
  let a: TenantFixture;
  let b: TenantFixture;
  beforeAll(async () => {
    a = await createTenantFixture(app, 'Routes A');
    b = await createTenantFixture(app, 'Routes B');
  });

  it('is not configured until set, and then answers the transport without its password', async () => {
    const none = await app.request('GET', '/v1/email-transport/fallback', { token: a.serviceKey });
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ configured: false });
    const put = await app.request('PUT', '/v1/email-transport/fallback', {
      token: a.serviceKey,
      body: { ...relay(fallback.port, 'backup@a.test', true), from_name: 'A Backup' },
    });
    expect(put.status, put.text).toBe(200);
    const expected = {
      configured: true,
      host: '127.0.0.1',
      port: fallback.port,
      secure: false,
      username: FALLBACK_USER,
      from_email: 'backup@a.test',
      from_name: 'A Backup',
      credentials_unreadable: false,
    };
    expect(put.body).toEqual(expected);
    expect(put.text).not.toContain(FALLBACK_PASS);
    for (const token of [a.serviceKey, a.ownerToken]) {
      const got = await app.request('GET', '/v1/email-transport/fallback', { token });
      expect(got.status).toBe(200);
      expect(got.body).toEqual(expected);
      expect(got.text).not.toContain(FALLBACK_PASS);
    }
    // The spec's /v1/email-transport keeps its meaning: the primary, still not configured.
    const primaryGet = await app.request('GET', '/v1/email-transport', { token: a.serviceKey });
    expect(primaryGet.body).toMatchObject({
      configured: false,
      install_default: { from: 'Herald <herald@install.test>' },
    });
  });

  it('encrypts the password bound to the tenant and the slot', async () => {
    const row = await queryOne<{ password_ciphertext: string }>(
      app.runtime.orm.em.fork(),
      `SELECT password_ciphertext FROM email_transports WHERE tenant_id = $1 AND slot = 'fallback'`,
      [a.tenantId],
    );
    expect(row!.password_ciphertext).not.toContain(FALLBACK_PASS);
    expect(
      app.runtime.keyRing.decrypt(row!.password_ciphertext, `email_transports/${a.tenantId}/fallback/password`),
    ).toBe(FALLBACK_PASS);
    // Not readable as the primary's password (a ciphertext copied across slots is useless).
    expect(() =>
      app.runtime.keyRing.decrypt(row!.password_ciphertext, `email_transports/${a.tenantId}/password`),
    ).toThrow();
  });

  it('keeps the stored password when a replacement omits it, but not for another server', async () => {
    const { password: _omit, ...withoutPassword } = relay(fallback.port, 'backup@a.test', true);
    const kept = await app.request('PUT', '/v1/email-transport/fallback', {
      token: a.serviceKey,
      body: { ...withoutPassword, from_name: 'A Backup 2' },
    });
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body.from_name).toBe('A Backup 2');
    const moved = await app.request('PUT', '/v1/email-transport/fallback', {
      token: a.serviceKey,
      body: { ...withoutPassword, port: fallback.port + 1 },
    });
    expectValidationError(moved, ['body', 'password']);
  });

  it('answers 422 for malformed input', async () => {
    for (const body of [
      {},
      { ...relay(fallback.port, 'backup@a.test'), port: 0 },
      { ...relay(fallback.port, 'backup@a.test'), port: 'x' },
      { ...relay(fallback.port, 'not-an-email') },
      { ...relay(fallback.port, 'backup@a.test'), host: 'bad host!' },
    ]) {
      const res = await app.request('PUT', '/v1/email-transport/fallback', { token: a.serviceKey, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.detail[0].loc[0]).toBe('body');
    }
    const raw = await app.request('PUT', '/v1/email-transport/fallback', { token: a.serviceKey, rawBody: '{"host":' });
    expect(raw.status).toBe(422);
  });

  it('answers 401 without a credential and 403 for a contact token or a non-member', async () => {
    await expectManagementOnly(app, a, 'GET', '/v1/email-transport/fallback');
    await expectManagementOnly(app, a, 'PUT', '/v1/email-transport/fallback', relay(fallback.port, 'x@a.test'));
    await expectManagementOnly(app, a, 'DELETE', '/v1/email-transport/fallback');
  });

  it("never shows or removes another tenant's fallback", async () => {
    const other = await app.request('GET', '/v1/email-transport/fallback', { token: b.serviceKey });
    expect(other.body).toEqual({ configured: false });
    expect((await app.request('DELETE', '/v1/email-transport/fallback', { token: b.serviceKey })).status).toBe(204);
    const still = await app.request('GET', '/v1/email-transport/fallback', { token: a.serviceKey });
    expect(still.body.configured).toBe(true);
  });

  it('removes the fallback alone: the primary stays, and removing the primary leaves the fallback', async () => {
    const put = await app.request('PUT', '/v1/email-transport', {
      token: a.serviceKey,
      body: relay(primary.port, 'primary@a.test'),
    });
    expect(put.status).toBe(200);
    expect((await app.request('DELETE', '/v1/email-transport/fallback', { token: a.ownerToken })).status).toBe(204);
    expect((await app.request('GET', '/v1/email-transport/fallback', { token: a.serviceKey })).body).toEqual({
      configured: false,
    });
    expect((await app.request('GET', '/v1/email-transport', { token: a.serviceKey })).body.configured).toBe(true);

    await app.request('PUT', '/v1/email-transport/fallback', {
      token: a.serviceKey,
      body: relay(fallback.port, 'backup@a.test', true),
    });
    expect((await app.request('DELETE', '/v1/email-transport', { token: a.serviceKey })).status).toBe(204);
    expect((await app.request('GET', '/v1/email-transport/fallback', { token: a.serviceKey })).body.configured).toBe(
      true,
    );
  });

  it("re-wraps the fallback's password with the rest on key rotation, under its own context", async () => {
    const [id, key] = app.config.encryptionKeys!.split(':') as [string, string];
    const ring = new KeyRing({ active: 'rotated', keys: { [id]: key, rotated: generateKey() } });
    const report = await rewrapAll(app.runtime.orm.em.fork(), ring);
    // The rows other tests made unreadable on purpose stay as they are; the rest move to the new key.
    expect(report.rewrapped).toBeGreaterThan(0);
    const row = await queryOne<{ password_ciphertext: string }>(
      app.runtime.orm.em.fork(),
      `SELECT password_ciphertext FROM email_transports WHERE tenant_id = $1 AND slot = 'fallback'`,
      [a.tenantId],
    );
    expect(envelopeKeyId(row!.password_ciphertext)).toBe('rotated');
    expect(ring.decrypt(row!.password_ciphertext, `email_transports/${a.tenantId}/fallback/password`)).toBe(
      FALLBACK_PASS,
    );
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await app.request('GET', '/v1/openapi.json')).body;
    expect(Object.keys(doc.paths['/v1/email-transport/fallback'])).toEqual(
      expect.arrayContaining(['get', 'put', 'delete']),
    );
  });
});

// The audit log: the route table is walked and every management write route (POST/PUT/PATCH/DELETE a
// console admin or a service key can call, less the exempt ones) is called once and must leave exactly
// its audit row, in the same transaction as the write (a refused write leaves none); secrets are
// masked; GET /v1/audit-log filters and pages; `herald audit` prints it on the host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestResponse } from '../support/app.ts';
import { runCli } from '../support/cli.ts';
import { addUser, createTenantFixture, requestAs, type TenantFixture } from '../support/fixtures.ts';
import { routes } from '../../server/api/routes/index.ts';
import { auditNames, isAuditedRoute } from '../../server/api/audit.ts';
import { query, queryOne } from '../../server/base/db/sql.ts';
import { newLinkToken } from '../../server/base/auth/link-tokens.ts';
import { newId } from '../../server/base/ids.ts';
import { totpCode, totpSecret } from '../support/totp.ts';

let app: TestApp;
let acme: TenantFixture;
let globex: TenantFixture;

const SMTP_SECRET = 'smtp-password-never-shown';
const CHAT_WEBHOOK_URL = 'https://hooks.slack.com/services/T1/B1/chat-webhook-never-shown';
const CHAT_BOT_TOKEN = 'xoxb-000000000000-chatbottokenneverShown';

beforeAll(async () => {
  app = await startTestApp({ config: { dnsServers: ['127.0.0.1:9'], allowPrivateWebhookUrls: true } });
  acme = await createTenantFixture(app, 'Acme');
  globex = await createTenantFixture(app, 'Globex');
});
afterAll(async () => {
  await app?.close();
});

interface AuditRow {
  action: string;
  actor_kind: string;
  actor_id: string;
  actor_email: string | null;
  target_kind: string;
  target_id: string | null;
  tenant_id: string | null;
  request_id: string;
  ip: string | null;
  changes: unknown;
}

const rowsOf = (requestId: string) =>
  query<AuditRow>(
    app.runtime.orm.em.fork(),
    `SELECT action, actor_kind, actor_id, actor_email, target_kind, target_id, tenant_id, request_id, ip, changes FROM audit_log WHERE request_id = $1`,
    [requestId],
  );

type Call = { as: 'service' | 'owner' | 'member'; path: string; body?: unknown };

/** The current code of the authenticator an otpauth URI enrols. */
const currentTotp = (uri: string) => totpCode(totpSecret(uri), Date.now());
/** One call per audited route, in an order that lets each find what it needs (s holds earlier results). */
function plan(s: Record<string, any>): Array<[string, () => Call]> {
  const type = '/v1/notification-types/audit_type';
  return [
    ['POST /v1/api-keys', () => ({ as: 'service', path: '/v1/api-keys', body: { name: 'audited' } })],
    ['DELETE /v1/api-keys/:api_key_id', () => ({ as: 'service', path: `/v1/api-keys/${s['POST /v1/api-keys'].id}` })],
    [
      'POST /v1/notification-types',
      () => ({ as: 'owner', path: '/v1/notification-types', body: { key: 'audit_type', name: 'Audit' } }),
    ],
    [
      'PATCH /v1/notification-types/:key/channel-defaults',
      () => ({ as: 'service', path: `${type}/channel-defaults`, body: { channel_defaults: { push: true } } }),
    ],
    [
      'PATCH /v1/notification-types/:key/opt-out-policy',
      () => ({ as: 'service', path: `${type}/opt-out-policy`, body: { opt_out: false } }),
    ],
    [
      'PATCH /v1/notification-types/:key/quiet-hours',
      () => ({ as: 'service', path: `${type}/quiet-hours`, body: { bypass_quiet_hours: true } }),
    ],
    [
      'PUT /v1/notification-types/:key/variables',
      () => ({ as: 'service', path: `${type}/variables`, body: { variables: [{ name: 'x', required: false }] } }),
    ],
    [
      'POST /v1/brandings',
      () => ({ as: 'service', path: '/v1/brandings', body: { key: 'audit-brand', values: { name: 'A' } } }),
    ],
    [
      'PUT /v1/brandings/:key/values',
      () => ({ as: 'service', path: '/v1/brandings/audit-brand/values', body: { values: { name: 'B' } } }),
    ],
    [
      'PUT /v1/brandings/:key/sender',
      () => ({
        as: 'service',
        path: '/v1/brandings/audit-brand/sender',
        body: { from_name: 'Audit', from_email: null, reply_to: null },
      }),
    ],
    [
      'POST /v1/sender-domains',
      () => ({ as: 'service', path: '/v1/sender-domains', body: { domain: 'audit.example.com' } }),
    ],
    [
      'POST /v1/sender-domains/:domain/refresh',
      () => ({ as: 'service', path: '/v1/sender-domains/audit.example.com/refresh' }),
    ],
    ['DELETE /v1/sender-domains/:domain', () => ({ as: 'service', path: '/v1/sender-domains/audit.example.com' })],
    [
      'POST /v1/email-templates',
      () => ({
        as: 'service',
        path: '/v1/email-templates',
        body: { notification_type_key: 'audit_type', subject: 'S', content: '<p>x</p>' },
      }),
    ],
    [
      'PUT /v1/email-templates/:template_id',
      () => ({
        as: 'service',
        path: `/v1/email-templates/${s['POST /v1/email-templates'].id}`,
        body: { subject: 'S2' },
      }),
    ],
    [
      'DELETE /v1/email-templates/:template_id',
      () => ({ as: 'service', path: `/v1/email-templates/${s['POST /v1/email-templates'].id}` }),
    ],
    [
      'POST /v1/inbox-templates',
      () => ({
        as: 'service',
        path: '/v1/inbox-templates',
        body: { notification_type_key: 'audit_type', title: 'T', content: 'C' },
      }),
    ],
    [
      'PUT /v1/inbox-templates/:template_id',
      () => ({ as: 'service', path: `/v1/inbox-templates/${s['POST /v1/inbox-templates'].id}`, body: { title: 'T2' } }),
    ],
    [
      'DELETE /v1/inbox-templates/:template_id',
      () => ({ as: 'service', path: `/v1/inbox-templates/${s['POST /v1/inbox-templates'].id}` }),
    ],
    [
      'POST /v1/sms-templates',
      () => ({ as: 'service', path: '/v1/sms-templates', body: { notification_type_key: 'audit_type', content: 'C' } }),
    ],
    [
      'PUT /v1/sms-templates/:template_id',
      () => ({ as: 'service', path: `/v1/sms-templates/${s['POST /v1/sms-templates'].id}`, body: { content: 'C2' } }),
    ],
    [
      'DELETE /v1/sms-templates/:template_id',
      () => ({ as: 'service', path: `/v1/sms-templates/${s['POST /v1/sms-templates'].id}` }),
    ],
    [
      'POST /v1/chat-templates',
      () => ({
        as: 'service',
        path: '/v1/chat-templates',
        body: { notification_type_key: 'audit_type', content: '**C**' },
      }),
    ],
    [
      'PUT /v1/chat-templates/:template_id',
      () => ({ as: 'service', path: `/v1/chat-templates/${s['POST /v1/chat-templates'].id}`, body: { content: 'C2' } }),
    ],
    [
      'DELETE /v1/chat-templates/:template_id',
      () => ({ as: 'service', path: `/v1/chat-templates/${s['POST /v1/chat-templates'].id}` }),
    ],
    [
      'POST /v1/http-templates',
      () => ({
        as: 'service',
        path: '/v1/http-templates',
        body: { notification_type_key: 'audit_type', body: { c: 'C' } },
      }),
    ],
    [
      'PUT /v1/http-templates/:template_id',
      () => ({
        as: 'service',
        path: `/v1/http-templates/${s['POST /v1/http-templates'].id}`,
        body: { body: { c: 'C2' } },
      }),
    ],
    [
      'DELETE /v1/http-templates/:template_id',
      () => ({ as: 'service', path: `/v1/http-templates/${s['POST /v1/http-templates'].id}` }),
    ],
    [
      'POST /v1/contacts',
      () => ({ as: 'service', path: '/v1/contacts', body: { external_id: 'audit-c', email: 'c@example.com' } }),
    ],
    [
      'POST /v1/contacts/bulk',
      () => ({ as: 'service', path: '/v1/contacts/bulk', body: { contacts: [{ external_id: 'audit-b' }] } }),
    ],
    [
      'PUT /v1/contacts/:id',
      () => ({ as: 'service', path: `/v1/contacts/${s['POST /v1/contacts'].id}`, body: { name: 'Ann' } }),
    ],
    [
      'PUT /v1/contacts/:id/language',
      () => ({ as: 'owner', path: `/v1/contacts/${s['POST /v1/contacts'].id}/language`, body: { language: 'de' } }),
    ],
    [
      'PUT /v1/contacts/:id/quiet-hours',
      () => ({
        as: 'service',
        path: `/v1/contacts/${s['POST /v1/contacts'].id}/quiet-hours`,
        body: { timezone: 'Europe/Berlin', quiet_hours: { start: '22:00', end: '07:00' } },
      }),
    ],
    [
      'PUT /v1/contacts/:id/preferences',
      () => ({
        as: 'service',
        path: `/v1/contacts/${s['POST /v1/contacts'].id}/preferences`,
        body: { type: 'audit_type', channel: 'email', enabled: false },
      }),
    ],
    [
      'POST /v1/contacts/:id/push-subscriptions',
      () => ({
        as: 'service',
        path: `/v1/contacts/${s['POST /v1/contacts'].id}/push-subscriptions`,
        body: { provider: 'expo', token: 'ExponentPushToken[audit]' },
      }),
    ],
    [
      'DELETE /v1/contacts/:id/push-subscriptions/:subscription_id',
      () => ({
        as: 'service',
        path: `/v1/contacts/${s['POST /v1/contacts'].id}/push-subscriptions/${s['POST /v1/contacts/:id/push-subscriptions'].id}`,
      }),
    ],
    [
      'POST /v1/contacts/:id/chat-destinations',
      () => ({
        as: 'service',
        path: `/v1/contacts/${s['POST /v1/contacts'].id}/chat-destinations`,
        body: { provider: 'slack', webhook_url: CHAT_WEBHOOK_URL },
      }),
    ],
    [
      'DELETE /v1/contacts/:id/chat-destinations/:destination_id',
      () => ({
        as: 'service',
        path: `/v1/contacts/${s['POST /v1/contacts'].id}/chat-destinations/${s['POST /v1/contacts/:id/chat-destinations'].id}`,
      }),
    ],
    ['DELETE /v1/contacts/:id', () => ({ as: 'service', path: `/v1/contacts/${s['POST /v1/contacts'].id}` })],
    [
      'PUT /v1/email-transport',
      () => ({
        as: 'owner',
        path: '/v1/email-transport',
        body: {
          host: 'smtp.example.com',
          port: 587,
          secure: false,
          username: 'u',
          password: SMTP_SECRET,
          from_email: 'a@example.com',
        },
      }),
    ],
    ['DELETE /v1/email-transport', () => ({ as: 'service', path: '/v1/email-transport' })],
    [
      'PUT /v1/email-transport/fallback',
      () => ({
        as: 'owner',
        path: '/v1/email-transport/fallback',
        body: {
          host: 'smtp-fallback.example.com',
          port: 587,
          secure: false,
          username: 'u',
          password: SMTP_SECRET,
          from_email: 'a@example.com',
        },
      }),
    ],
    ['DELETE /v1/email-transport/fallback', () => ({ as: 'service', path: '/v1/email-transport/fallback' })],
    [
      'PUT /v1/push-transport/:provider',
      () => ({ as: 'service', path: '/v1/push-transport/webpush', body: { subject: 'mailto:ops@example.com' } }),
    ],
    ['DELETE /v1/push-transport/:provider', () => ({ as: 'service', path: '/v1/push-transport/webpush' })],
    [
      'PUT /v1/chat-transport/:provider',
      () => ({ as: 'service', path: '/v1/chat-transport/slack', body: { bot_token: CHAT_BOT_TOKEN } }),
    ],
    ['DELETE /v1/chat-transport/:provider', () => ({ as: 'service', path: '/v1/chat-transport/slack' })],
    [
      'PUT /v1/http-transport',
      () => ({ as: 'service', path: '/v1/http-transport', body: { url: 'https://93.184.215.14/hook' } }),
    ],
    ['POST /v1/http-transport/rotate-secret', () => ({ as: 'owner', path: '/v1/http-transport/rotate-secret' })],
    ['DELETE /v1/http-transport', () => ({ as: 'service', path: '/v1/http-transport' })],
    [
      'PUT /v1/sms-transport/:provider',
      () => ({
        as: 'service',
        path: '/v1/sms-transport/vonage',
        body: { api_key: 'abc123', api_secret: SMTP_SECRET, from: 'Acme' },
      }),
    ],
    ['DELETE /v1/sms-transport/:provider', () => ({ as: 'service', path: '/v1/sms-transport/vonage' })],
    [
      'PUT /v1/notification-types/:key/workflow',
      () => ({ as: 'service', path: `${type}/workflow`, body: { steps: [{ kind: 'channel', channel: 'inbox' }] } }),
    ],
    ['DELETE /v1/notification-types/:key/workflow', () => ({ as: 'service', path: `${type}/workflow` })],
    [
      'POST /v1/notifications/cancel',
      () => ({ as: 'service', path: '/v1/notifications/cancel', body: { cancellation_key: 'audit-key' } }),
    ],
    ['DELETE /v1/notifications/:event_id', () => ({ as: 'service', path: `/v1/notifications/${s.scheduledEventId}` })],
    ['POST /v1/topics', () => ({ as: 'service', path: '/v1/topics', body: { key: 'audit-topic', name: 'Audit' } })],
    [
      'POST /v1/topics/:key/subscribers',
      () => ({ as: 'service', path: '/v1/topics/audit-topic/subscribers', body: { external_ids: ['audit-sub'] } }),
    ],
    [
      'DELETE /v1/topics/:key/subscribers',
      () => ({ as: 'service', path: '/v1/topics/audit-topic/subscribers', body: { external_ids: ['audit-sub'] } }),
    ],
    [
      'POST /v1/broadcasts',
      () => ({
        as: 'owner',
        path: '/v1/broadcasts',
        body: {
          type: 'audit_type',
          audience: { topic: 'audit-topic' },
          send_at: new Date(Date.now() + 3600_000).toISOString(),
        },
      }),
    ],
    [
      'POST /v1/broadcasts/:broadcast_id/cancel',
      () => ({ as: 'service', path: `/v1/broadcasts/${s['POST /v1/broadcasts'].broadcast_id}/cancel` }),
    ],
    ['DELETE /v1/topics/:key', () => ({ as: 'service', path: '/v1/topics/audit-topic' })],
    ['DELETE /v1/notification-types/:key', () => ({ as: 'service', path: type })],
    ['POST /v1/notification-types/:key/restore', () => ({ as: 'service', path: `${type}/restore` })],
    ['DELETE /v1/brandings/:key', () => ({ as: 'service', path: '/v1/brandings/audit-brand' })],
    [
      'POST /v1/webhooks',
      () => ({
        as: 'service',
        path: '/v1/webhooks',
        body: { url: 'http://127.0.0.1:9/hook', event_types: ['delivery.sent'], description: 'audited' },
      }),
    ],
    [
      'PATCH /v1/webhooks/:id',
      () => ({ as: 'service', path: `/v1/webhooks/${s['POST /v1/webhooks'].id}`, body: { description: 'renamed' } }),
    ],
    [
      'POST /v1/webhooks/:id/rotate-secret',
      () => ({ as: 'service', path: `/v1/webhooks/${s['POST /v1/webhooks'].id}/rotate-secret` }),
    ],
    ['POST /v1/webhooks/:id/test', () => ({ as: 'service', path: `/v1/webhooks/${s['POST /v1/webhooks'].id}/test` })],
    [
      'POST /v1/webhooks/:id/deliveries/:delivery_id/retry',
      () => ({
        as: 'service',
        path: `/v1/webhooks/${s['POST /v1/webhooks'].id}/deliveries/${s['POST /v1/webhooks/:id/test'].id}/retry`,
      }),
    ],
    ['DELETE /v1/webhooks/:id', () => ({ as: 'service', path: `/v1/webhooks/${s['POST /v1/webhooks'].id}` })],
    [
      'POST /v1/suppressions',
      () => ({ as: 'service', path: '/v1/suppressions', body: { email: 'bounced@example.com' } }),
    ],
    ['DELETE /v1/suppressions/:email', () => ({ as: 'service', path: '/v1/suppressions/bounced@example.com' })],
    [
      'POST /v1/configuration/apply',
      () => ({ as: 'service', path: '/v1/configuration/apply', body: { document: s.configuration, dry_run: false } }),
    ],
    ['POST /v1/auth/tenants', () => ({ as: 'owner', path: '/v1/auth/tenants', body: { name: 'Audit Co' } })],
    [
      'PATCH /v1/auth/tenants/:tenant_id',
      () => ({ as: 'owner', path: `/v1/auth/tenants/${s['POST /v1/auth/tenants'].id}`, body: { name: 'Audit Co 2' } }),
    ],
    ['POST /v1/auth/mfa/totp', () => ({ as: 'member', path: '/v1/auth/mfa/totp' })],
    [
      'POST /v1/auth/mfa/totp/confirm',
      () => ({
        as: 'member',
        path: '/v1/auth/mfa/totp/confirm',
        body: { code: currentTotp(s['POST /v1/auth/mfa/totp'].otpauth_uri) },
      }),
    ],
    [
      'POST /v1/auth/mfa/totp/disable',
      () => ({
        as: 'member',
        path: '/v1/auth/mfa/totp/disable',
        body: { recovery_code: s['POST /v1/auth/mfa/totp/confirm'].recovery_codes[0] },
      }),
    ],
    [
      'POST /v1/auth/tenants/:tenant_id/archive',
      () => ({ as: 'owner', path: `/v1/auth/tenants/${s['POST /v1/auth/tenants'].id}/archive` }),
    ],
    [
      'POST /v1/auth/tenants/:tenant_id/unarchive',
      () => ({ as: 'owner', path: `/v1/auth/tenants/${s['POST /v1/auth/tenants'].id}/unarchive` }),
    ],
    [
      'POST /v1/auth/tenants/:tenant_id/data-requests',
      () => ({
        as: 'owner',
        path: `/v1/auth/tenants/${s['POST /v1/auth/tenants'].id}/data-requests`,
        body: { kind: 'export' },
      }),
    ],
    [
      'POST /v1/auth/tenants/:tenant_id/invitations',
      () => ({
        as: 'owner',
        path: `/v1/auth/tenants/${acme.tenantId}/invitations`,
        body: { email: 'invited@example.com', role: 'admin' },
      }),
    ],
    [
      'DELETE /v1/auth/tenants/:tenant_id/invitations/:invitation_id',
      () => ({
        as: 'owner',
        path: `/v1/auth/tenants/${acme.tenantId}/invitations/${s['POST /v1/auth/tenants/:tenant_id/invitations'].id}`,
      }),
    ],
    [
      'POST /v1/auth/invitations/:token/accept-existing',
      () => ({ as: 'member', path: `/v1/auth/invitations/${s.invitationToken}/accept-existing` }),
    ],
    [
      'PATCH /v1/auth/tenants/:tenant_id/members/:user_id',
      () => ({
        as: 'owner',
        path: `/v1/auth/tenants/${acme.tenantId}/members/${s.member.userId}`,
        body: { role: 'admin' },
      }),
    ],
    [
      'DELETE /v1/auth/tenants/:tenant_id/members/:user_id',
      () => ({ as: 'owner', path: `/v1/auth/tenants/${acme.tenantId}/members/${s.member.userId}` }),
    ],
  ];
}

describe('every management write route', () => {
  const state: Record<string, any> = {};
  const calls = plan(state);

  it('has a call in this test (a new write route must be added here, or exempted with a reason)', () => {
    const audited = routes.filter(isAuditedRoute).map((r) => `${r.method} ${r.path}`);
    expect(calls.map(([name]) => name).sort()).toEqual(audited.sort());
    for (const route of routes.filter((r) => r.audit && 'exempt' in r.audit))
      expect((route.audit as { exempt: string }).exempt.length).toBeGreaterThan(10);
  });

  it('writes its audit row in the same transaction, with actor, action, target, ip and request id', async () => {
    // A member of Globex, invited to Acme with a token only this test knows (the emailed one is never stored).
    state.member = await addUser(app, globex.tenantId, 'admin', true);
    const link = newLinkToken();
    await query(
      app.runtime.orm.em.fork(),
      `INSERT INTO invitations (id, tenant_id, email, role, token_hash, expires_at, created_at) VALUES ($1, $2, $3, 'admin', $4, now() + interval '1 day', now())`,
      [newId(), acme.tenantId, state.member.email, link.hash],
    );
    state.invitationToken = link.token;
    state.configuration = (await requestAs(app, 'GET', '/v1/configuration', { token: acme.serviceKey })).body;
    state.schedule = async () => {
      const sendAt = new Date(Date.now() + 3600_000).toISOString();
      const res = await requestAs(app, 'POST', '/v1/notifications', {
        token: acme.serviceKey,
        body: { type: 'audit_type', recipients: ['scheduled'], send_at: sendAt },
      });
      expect(res.status, res.text).toBe(202);
      state.scheduledEventId = res.body.events[0].event_id;
    };
    const tokens = { service: acme.serviceKey, owner: acme.ownerToken, member: () => state.member.token as string };
    for (const [name, make] of calls) {
      if (name === 'DELETE /v1/notifications/:event_id') await state.schedule();
      const call = make();
      const [method] = name.split(' ');
      const token = call.as === 'member' ? tokens.member() : tokens[call.as];
      const res: TestResponse = await requestAs(app, method!, call.path, { token, body: call.body });
      expect(res.status, `${name}: ${res.text}`).toBeLessThan(300);
      if (res.status !== 204) state[name] = res.body;
      const route = routes.find((r) => `${r.method} ${r.path}` === name)!;
      const rows = await rowsOf(res.headers.get('x-request-id')!);
      expect(rows, name).toHaveLength(1);
      const row = rows[0]!;
      expect(row.action).toBe(auditNames(route).action);
      expect(row.actor_kind).toBe(call.as === 'service' ? 'service_key' : 'user');
      expect(row.actor_id).toBe(
        call.as === 'service' ? acme.apiKeyId : call.as === 'owner' ? acme.ownerId : state.member.userId,
      );
      if (call.as === 'owner') expect(row.actor_email).toBe(acme.ownerEmail);
      expect(row.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      expect(row.target_kind.length).toBeGreaterThan(0);
    }
  });

  it('names the target and the tenant', async () => {
    const all = await query<AuditRow>(
      app.runtime.orm.em.fork(),
      `SELECT action, target_kind, target_id, tenant_id FROM audit_log`,
    );
    const find = (action: string) => all.find((r) => r.action === action)!;
    expect(find('brand.create')).toMatchObject({
      target_kind: 'brand',
      target_id: 'audit-brand',
      tenant_id: acme.tenantId,
    });
    expect(find('api_key.delete')).toMatchObject({ target_kind: 'api_key', target_id: state['POST /v1/api-keys'].id });
    expect(find('push_subscription.create').target_id).toBe(state['POST /v1/contacts/:id/push-subscriptions'].id);
    expect(find('tenant.create')).toMatchObject({
      target_id: state['POST /v1/auth/tenants'].id,
      tenant_id: state['POST /v1/auth/tenants'].id,
    });
    expect(find('topic.subscribers.add')).toMatchObject({
      target_kind: 'topic',
      target_id: 'audit-topic',
      tenant_id: acme.tenantId,
    });
    expect(find('broadcast.create')).toMatchObject({
      target_kind: 'broadcast',
      target_id: state['POST /v1/broadcasts'].broadcast_id,
    });
    // The invitation's token is a secret: neither target nor changes carry it.
    expect(find('invitation.accept')).toMatchObject({
      target_kind: 'invitation',
      target_id: null,
      tenant_id: acme.tenantId,
    });
  });

  it('masks secrets: the SMTP password and issued keys never reach the log', async () => {
    const row = await queryOne<{ changes: Record<string, unknown> }>(
      app.runtime.orm.em.fork(),
      `SELECT changes FROM audit_log WHERE action = 'email_transport.update'`,
    );
    expect(row!.changes.password).toBe('********');
    expect(row!.changes.host).toBe('smtp.example.com');
    const dump = await queryOne<{ text: string }>(
      app.runtime.orm.em.fork(),
      `SELECT string_agg(changes::text || coalesce(target_id, ''), ' ') AS text FROM audit_log`,
    );
    expect(dump!.text).not.toContain(SMTP_SECRET);
    expect(dump!.text).not.toContain('chat-webhook-never-shown');
    expect(dump!.text).not.toContain(CHAT_BOT_TOKEN);
    expect(dump!.text).not.toContain(state['POST /v1/api-keys'].key);
    expect(dump!.text).not.toContain(state.invitationToken);
    // A webhook's signing secret is in the answers only, never in the entries.
    expect(dump!.text).not.toContain(state['POST /v1/webhooks'].secret);
    expect(dump!.text).not.toContain(state['POST /v1/webhooks/:id/rotate-secret'].secret);
  });

  it('leaves no row for a write that fails (409), nor for a contact token acting on its own preferences', async () => {
    const dup = await requestAs(app, 'POST', '/v1/brandings', { token: acme.serviceKey, body: { key: 'default' } });
    expect(dup.status).toBe(409);
    expect(await rowsOf(dup.headers.get('x-request-id')!)).toHaveLength(0);
    const contactId = await acme.contact('self-service');
    const own = await requestAs(app, 'PUT', `/v1/contacts/${contactId}/language`, {
      token: acme.tokenFor(contactId),
      body: { language: 'fr' },
    });
    expect(own.status).toBe(200);
    expect(await rowsOf(own.headers.get('x-request-id')!)).toHaveLength(0);
  });
});

describe('GET /v1/audit-log', () => {
  const list = (qs: string, token: string) => requestAs(app, 'GET', `/v1/audit-log${qs}`, { token });

  it("lists the tenant's entries newest first, filtered by action (exact or prefix), actor and time", async () => {
    const all = await list('', acme.ownerToken);
    expect(all.status).toBe(200);
    expect(all.body.items.length).toBeGreaterThan(20);
    expect(all.body.items.every((e: { tenant_id: string }) => e.tenant_id === acme.tenantId)).toBe(true);
    const ats = all.body.items.map((e: { at: string }) => e.at);
    expect([...ats].sort().reverse()).toEqual(ats);
    const brands = await list('?action=brand.*', acme.ownerToken);
    expect(new Set(brands.body.items.map((e: { action: string }) => e.action))).toEqual(
      new Set(['brand.create', 'brand.values.update', 'brand.sender.update', 'brand.delete']),
    );
    const exact = await list('?action=brand.create', acme.ownerToken);
    expect(exact.body.items).toHaveLength(1);
    const byOwner = await list(`?actor=${encodeURIComponent(acme.ownerEmail)}`, acme.ownerToken);
    expect(byOwner.body.items.length).toBeGreaterThan(0);
    expect(byOwner.body.items.every((e: { actor: { email: string } }) => e.actor.email === acme.ownerEmail)).toBe(true);
    const byKey = await list(`?actor=${acme.apiKeyId}`, acme.ownerToken);
    expect(byKey.body.items.every((e: { actor: { kind: string } }) => e.actor.kind === 'service_key')).toBe(true);
    const future = await list(
      `?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
      acme.ownerToken,
    );
    expect(future.body.items).toEqual([]);
  });

  it("names a service key actor by the key's name beside its id, also once the key is revoked", async () => {
    const issued = await requestAs(app, 'POST', '/v1/api-keys', {
      token: acme.ownerToken,
      body: { name: 'deploy-bot' },
    });
    expect(issued.status).toBe(201);
    const key = issued.body as { id: string; key: string };
    const wrote = await requestAs(app, 'POST', '/v1/brandings', {
      token: key.key,
      body: { key: 'named-actor-brand', values: { name: 'Named actor' } },
    });
    expect(wrote.status, wrote.text).toBe(201);
    const named = async () => {
      const res = await list(`?actor=${key.id}&action=brand.create`, acme.ownerToken);
      expect(res.status).toBe(200);
      expect(res.body.items).toHaveLength(1);
      return res.body.items[0].actor;
    };
    expect(await named()).toEqual({ kind: 'service_key', id: key.id, email: null, name: 'deploy-bot' });
    expect((await requestAs(app, 'DELETE', `/v1/api-keys/${key.id}`, { token: acme.ownerToken })).status).toBe(204);
    expect((await named()).name).toBe('deploy-bot');
    const byOwner = await list(`?actor=${encodeURIComponent(acme.ownerEmail)}`, acme.ownerToken);
    expect(byOwner.body.items[0].actor).toEqual({ kind: 'user', id: acme.ownerId, email: acme.ownerEmail, name: null });
  });

  it('pages with a cursor', async () => {
    const first = await list('?limit=3', acme.ownerToken);
    expect(first.body.items).toHaveLength(3);
    const second = await list(`?limit=3&cursor=${first.body.next_cursor}`, acme.ownerToken);
    expect(second.body.items).toHaveLength(3);
    expect(second.body.items[0].id < first.body.items[2].id).toBe(true);
  });

  it("shows another tenant nothing of this one's", async () => {
    const other = await list('', globex.ownerToken);
    expect(other.status).toBe(200);
    expect(other.body.items.every((e: { tenant_id: string }) => e.tenant_id === globex.tenantId)).toBe(true);
  });

  it('answers 401 without a credential, 403 to a service key or a contact token, 422 to bad filters', async () => {
    expect((await requestAs(app, 'GET', '/v1/audit-log')).status).toBe(401);
    expect((await list('', acme.serviceKey)).status).toBe(403);
    expect((await list('', acme.contactToken)).status).toBe(403);
    for (const bad of ['?limit=0', '?limit=201', '?since=yesterday', '?cursor=nope']) {
      const res = await list(bad, acme.ownerToken);
      expect(res.status, bad).toBe(422);
      expect(Array.isArray(res.body.detail)).toBe(true);
    }
  });
});

describe('herald audit and the CLI writes', () => {
  const env = () => ({
    HERALD_HOME: app.dataDir,
    DATABASE_URL: app.database.url,
    HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys!,
    HERALD_LOG_LEVEL: 'error',
  });

  it('records a key issued on the host with the cli actor, and prints the log', async () => {
    const issued = await runCli(['api-keys', 'issue', '--tenant', acme.tenantId, '--name', 'from-cli', '--json'], {
      env: env(),
    });
    expect(issued.code, issued.stderr).toBe(0);
    const key = JSON.parse(issued.stdout) as { id: string; key: string };
    const res = await runCli(['audit', '--tenant', acme.tenantId, '--action', 'api_key.create', '--json'], {
      env: env(),
    });
    expect(res.code, res.stderr).toBe(0);
    const page = JSON.parse(res.stdout) as {
      items: Array<{ actor: { kind: string; id: string }; target: { id: string } }>;
    };
    const entry = page.items.find((e) => e.target.id === key.id)!;
    expect(entry.actor.kind).toBe('cli');
    expect(entry.actor.id).toMatch(/@/);
    expect(res.stdout).not.toContain(key.key);
    const table = await runCli(['audit', '--limit', '5'], { env: env() });
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain('api_key.create');
    const byKey = await runCli(['audit', '--tenant', acme.tenantId, '--actor', acme.apiKeyId, '--limit', '1'], {
      env: env(),
    });
    expect(byKey.code, byKey.stderr).toBe(0);
    expect(byKey.stdout).toContain(`service_key:fixture (${acme.apiKeyId})`);
    const bad = await runCli(['audit', '--since', 'yesterday'], { env: env() });
    expect(bad.code).toBe(2);
  });
});

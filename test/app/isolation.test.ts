// Tenant isolation over every route: two tenants, A and B, each hold a real object of every kind a path
// parameter can name. Every route with a path parameter is called with each credential of tenant B its
// rule accepts, aimed at A's object (and, where a path names two objects, at every mix of A's and B's
// that includes one of A's): it must refuse as the contract says (404; 403 for a path naming A's tenant),
// say nothing of A (no id, key, name, address or secret of A in the answer beyond what the request
// itself carried), and, for a write, leave A's objects as A reads them back. Requests naming A's object
// in the body or a header get what a tenant without it gets. B's lists (filtered by A's objects too),
// B's own objects and B's live stream never show A's; and A's rows in every tenant table are the same
// after all of it. The run prints how many attempts it made and how many leaked.
//
// AIMS says, for each route with a path parameter, how to aim it at A's object; EXEMPT lists the public
// routes whose parameter names no tenant object. A new route with a path parameter that neither names
// fails the first test, so isolation is decided for it before it ships.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startTestApp, type TestApp } from '../support/app.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { startExpoPeer, type ExpoPeer } from '../support/expo-peer.ts';
import { startDnsServer, type DnsServer } from '../support/dns-server.ts';
import { eventually } from '../support/eventually.ts';
import {
  addUser,
  createTenantFixture,
  freshIp,
  linkTokenOf,
  requestAs,
  sql,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';
import { routes } from '../../server/api/routes/index.ts';
import { addSsoProvider } from '../../server/resources/sso.ts';
import type { AuthRule, RouteDefinition } from '../../server/api/route.ts';

/* ---------------------------------------------------------------- SQL of the row check */

const TENANT_TABLES = `SELECT table_name AS name FROM information_schema.columns
  WHERE table_schema = current_schema() AND column_name = 'tenant_id' ORDER BY table_name`;

/** One digest of a tenant's rows in `table`, without `last_used_at`: A's reads with its key move that. */
function tenantRowsDigestSql(table: string): string {
  return `SELECT count(*)::int AS rows, coalesce(md5(string_agg(r::text, ',' ORDER BY r::text)), '') AS digest
      FROM (SELECT to_jsonb(t) - 'last_used_at' AS r FROM "${table}" t WHERE tenant_id = $1) s`;
}

const TENANT_ROW_DIGEST = `SELECT count(*)::int AS rows, coalesce(md5(string_agg(to_jsonb(t)::text, ',')), '') AS digest
  FROM tenants t WHERE id = $1`;
const MEMBER_USERS_DIGEST = `SELECT count(*)::int AS rows,
         coalesce(md5(string_agg(to_jsonb(u)::text, ',' ORDER BY u.id)), '') AS digest
    FROM users u JOIN memberships m ON m.user_id = u.id WHERE m.tenant_id = $1`;

/** Tables left out of the row check, with the reason. */
const UNCHECKED_TABLES: Record<string, string> = {
  throttle_hits: 'rate-limit buckets, which a periodic job prunes at any time',
};

/* ---------------------------------------------------------------- the two tenants */

interface World {
  fx: TenantFixture;
  /** In every key, name and address of the world: finding it in an answer of the other tenant is a leak. */
  tag: string;
  contactId: string;
  externalId: string;
  contactToken: string;
  typeKey: string;
  deletedTypeKey: string;
  brandKey: string;
  emailTemplateId: string;
  inboxTemplateId: string;
  smsTemplateId: string;
  chatTemplateId: string;
  httpTemplateId: string;
  topicKey: string;
  webhookId: string;
  webhookDeliveryId: string;
  broadcastId: string;
  /** A delivered trigger (sent with an idempotency key), and one scheduled a month ahead with a cancellation key. */
  eventId: string;
  idempotencyKey: string;
  scheduledEventId: string;
  cancellationKey: string;
  apiKeyId: string;
  memberUserId: string;
  memberEmail: string;
  invitationId: string;
  invitationToken: string;
  senderDomain: string;
  suppressedEmail: string;
  dataRequestId: string;
  inboxItemId: string;
  pushSubscriptionId: string;
  deviceToken: string;
  chatDestinationId: string;
  /** A chat destination's webhook URL: a credential, never answered whole. */
  chatWebhookUrl: string;
  /** Every value that identifies the world's data: ids, keys, names, addresses, secrets (longest first). */
  markers: string[];
}

let app: TestApp;
let smtp: SmtpPeer;
let receiver: WebhookReceiver;
let expo: ExpoPeer;
let dnsServer: DnsServer;
let A: World;
let B: World;
let rowsBefore: Map<string, string>;

/** The figures the run prints: attempts on A's objects (and the routes they took), B's own reads, leaks. */
const tally = { attempts: 0, leaked: 0, writes: 0, routes: new Set<string>(), reads: 0 };

beforeAll(async () => {
  [smtp, receiver, expo, dnsServer] = await Promise.all([
    startSmtpPeer(),
    startWebhookReceiver(),
    startExpoPeer(),
    startDnsServer(),
  ]);
  app = await startTestApp({
    config: {
      smtpUrl: smtp.url,
      allowPrivateWebhookUrls: true,
      dnsServers: [dnsServer.address],
      // No chat provider listens there: a test send with a bot B set up fails at once.
      providers: { expoUrl: expo.url, slackUrl: 'http://127.0.0.1:1' },
    },
    webhooks: { retryScheduleMs: [100, 200, 300], pollMs: 20 },
  });
  [A, B] = await Promise.all([plant('Alpha', 'alpha'), plant('Beta', 'beta')]);
  rowsBefore = await tenantRows(A);
});

afterAll(async () => {
  console.log(
    `isolation: ${tally.attempts} cross-tenant attempts over ${tally.routes.size} routes (${tally.writes} ` +
      `writes, A's objects read back after each); ${tally.reads} reads of B's own lists, objects and stream; ` +
      `${tally.leaked} leaked`,
  );
  await app?.close();
  await Promise.all([smtp?.close(), receiver?.close(), expo?.close(), dnsServer?.close()]);
});

/** A call of the world's own that must succeed; answers its body. */
async function own(
  token: string,
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
): Promise<any> {
  const res = await requestAs(app, method, path, { token, body, headers });
  if (res.status >= 300) throw new Error(`setup ${method} ${path}: ${res.status} ${res.text.slice(0, 300)}`);
  return res.body;
}

/** A tenant with one real object of every kind, made through the API with the tenant's own credentials. */
async function plant(name: string, prefix: string): Promise<World> {
  const fx = await createTenantFixture(app, `${name} Corp`);
  const tag = `${prefix}${Math.random().toString(36).slice(2, 10)}`;
  const svc = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    own(fx.serviceKey, method, path, body, headers);
  const owner = (method: string, path: string, body?: unknown) => own(fx.ownerToken, method, path, body);

  const typeKey = `${tag}-type`;
  await svc('POST', '/v1/notification-types', {
    key: typeKey,
    name: `${tag} Type`,
    description: `${tag} description`,
    channel_defaults: { inbox: true, email: false },
    variables: [{ name: 'order', required: false }],
  });
  await svc('PUT', `/v1/notification-types/${typeKey}/workflow`, { steps: [{ kind: 'channel', channel: 'inbox' }] });
  const deletedTypeKey = `${tag}-gone`;
  await svc('POST', '/v1/notification-types', { key: deletedTypeKey, name: `${tag} Gone` });
  await svc('DELETE', `/v1/notification-types/${deletedTypeKey}`);
  const brandKey = `${tag}-brand`;
  await svc('POST', '/v1/brandings', {
    key: brandKey,
    values: { name: `${tag} Brand`, colour: '#336699' },
    sender: { from_name: `${tag} News`, from_email: `news@${tag}.test` },
  });
  const emailTemplate = await svc('POST', '/v1/email-templates', {
    notification_type_key: typeKey,
    brand_key: brandKey,
    subject: `${tag} subject {{ order }}`,
    content: `<p>${tag} email {{ order }}</p>`,
  });
  const inboxTemplate = await svc('POST', '/v1/inbox-templates', {
    notification_type_key: typeKey,
    title: `${tag} title {{ order }}`,
    content: `${tag} inbox {{ order }}`,
  });
  const smsTemplate = await svc('POST', '/v1/sms-templates', {
    notification_type_key: typeKey,
    content: `${tag} sms {{ order }}`,
  });
  const chatTemplate = await svc('POST', '/v1/chat-templates', {
    notification_type_key: typeKey,
    content: `**${tag}** chat {{ order }}`,
  });
  const httpTemplate = await svc('POST', '/v1/http-templates', {
    notification_type_key: typeKey,
    body: { tag: `${tag} http {{ order }}` },
  });
  const externalId = `${tag}-contact`;
  const contact = await svc('POST', '/v1/contacts', {
    external_id: externalId,
    email: `${tag}.contact@example.test`,
    name: `${tag} Contact`,
    properties: { plan: `${tag}-plan` },
  });
  await svc('PUT', `/v1/contacts/${contact.id}/language`, { language: 'de' });
  await svc('PUT', `/v1/contacts/${contact.id}/preferences`, { type: typeKey, channel: 'email', enabled: false });
  const deviceToken = `ExponentPushToken[${tag}]`;
  const subscription = await svc('POST', `/v1/contacts/${contact.id}/push-subscriptions`, {
    provider: 'expo',
    token: deviceToken,
  });
  const chatWebhookUrl = `https://hooks.${tag}.test/services/${tag}-chat-secret`;
  const chatDestination = await svc('POST', `/v1/contacts/${contact.id}/chat-destinations`, {
    provider: 'slack',
    webhook_url: chatWebhookUrl,
    label: `${tag} channel`,
  });
  // Only A has a Slack bot and a Vonage transport: B's calls on them act on providers B lacks.
  if (prefix === 'alpha') {
    await svc('PUT', '/v1/chat-transport/slack', { bot_token: 'xoxb-000000000001-alphabottoken' });
    await svc('PUT', '/v1/sms-transport/vonage', {
      api_key: `${tag}key`,
      api_secret: `${tag}-vonage-secret`,
      from: 'Alpha',
    });
  }
  const topicKey = `${tag}-topic`;
  await svc('POST', '/v1/topics', { key: topicKey, name: `${tag} Topic` });
  await svc('POST', `/v1/topics/${topicKey}/subscribers`, { external_ids: [externalId] });
  const webhook = await svc('POST', '/v1/webhooks', {
    url: `${receiver.url}/${tag}`,
    event_types: ['webhook.test'],
    description: `${tag} hook`,
  });
  const delivery = await svc('POST', `/v1/webhooks/${webhook.id}/test`);
  const idempotencyKey = `${tag}-idem`;
  const trigger = await svc(
    'POST',
    '/v1/notifications',
    {
      type: typeKey,
      recipients: [externalId],
      variables: { order: `${tag}-order` },
      secret_variables: { coupon: `${tag}-coupon` },
      channels: ['inbox'],
    },
    { 'idempotency-key': idempotencyKey },
  );
  const monthAhead = new Date(Date.now() + 30 * 86_400_000).toISOString();
  const cancellationKey = `${tag}-cancel`;
  const scheduled = await svc('POST', '/v1/notifications', {
    type: typeKey,
    recipients: [externalId],
    channels: ['inbox'],
    send_at: monthAhead,
    cancellation_key: cancellationKey,
  });
  const broadcast = await svc('POST', '/v1/broadcasts', {
    type: typeKey,
    audience: { topic: topicKey },
    channels: ['inbox'],
    send_at: monthAhead,
  });
  const apiKey = await svc('POST', '/v1/api-keys', { name: `${tag} ci` });
  const member = await addUser(app, fx.tenantId, 'owner');
  const inviteeEmail = `${tag}.invitee@example.test`;
  const invitation = await owner('POST', `/v1/auth/tenants/${fx.tenantId}/invitations`, {
    email: inviteeEmail,
    role: 'admin',
  });
  const invitationToken = linkTokenOf(await smtp.waitFor((m) => m.envelope.to.includes(inviteeEmail), 30_000));
  const senderDomain = `mail.${tag}.test`;
  const domain = await svc('POST', '/v1/sender-domains', { domain: senderDomain });
  // Checked now (and verified): the hourly re-check takes domains unchecked for a day, not this one.
  dnsServer.publishTxt(domain.dns_records[0].name, domain.dns_records[0].value);
  expect((await svc('POST', `/v1/sender-domains/${senderDomain}/refresh`)).status).toBe('verified');
  const suppressedEmail = `${tag}.bounced@example.test`;
  await svc('POST', '/v1/suppressions', { email: suppressedEmail });
  await svc('PUT', '/v1/email-transport', {
    host: '127.0.0.1',
    port: smtp.port,
    username: `${tag}-smtp-user`,
    password: `${tag}-smtp-password`,
    from_email: `noreply@${tag}.test`,
    from_name: `${tag} Mailer`,
  });
  await svc('PUT', '/v1/push-transport/webpush', { subject: `mailto:push@${tag}.test` });
  const http = await svc('PUT', '/v1/http-transport', {
    url: `${receiver.url}/${tag}-http`,
    headers: { 'X-Tag': `${tag}-http-header` },
  });
  // Only A has an Expo transport: B's calls on /v1/push-transport/expo act on a provider B lacks.
  if (prefix === 'alpha') await svc('PUT', '/v1/push-transport/expo', { access_token: `${tag}-expo-token` });
  const vapid = await svc('GET', '/v1/web-push/public-key');
  // An operator adds SSO providers (herald sso add); no route of a tenant's names one.
  const sso = await addSsoProvider(app.runtime, app.runtime.orm.em.fork(), {
    slug: `${tag}-sso`,
    kind: 'github',
    displayName: `${tag} SSO`,
    clientId: `${tag}-client`,
    clientSecret: `${tag}-client-secret`,
    allowedDomains: [`${tag}.test`],
    tenantId: fx.tenantId,
    defaultRole: 'admin',
  });

  const [final] = await waitForFinal(app, [trigger.events[0].event_id]);
  expect(final!.status).toBe('delivered');
  const inbox = await own(fx.tokenFor(contact.id), 'GET', `/v1/contacts/${contact.id}/notifications`);
  const dataRequest = await owner('POST', `/v1/auth/tenants/${fx.tenantId}/data-requests`, { kind: 'export' });
  const filed = await eventually(
    async () => {
      const state = await owner('GET', `/v1/auth/tenants/${fx.tenantId}/data-requests/${dataRequest.id}`);
      return ['queued', 'running'].includes(state.status) ? false : state;
    },
    { timeoutMs: 60_000, message: 'the export did not finish' },
  );
  expect(filed).toMatchObject({ status: 'completed', error: null });
  await eventually(
    async () => (await svc('GET', `/v1/webhooks/${webhook.id}/deliveries`)).items[0]?.status === 'succeeded',
    { message: 'the test webhook was not delivered' },
  );

  const world: Omit<World, 'markers'> = {
    fx,
    tag,
    contactId: contact.id,
    externalId,
    contactToken: fx.tokenFor(contact.id),
    typeKey,
    deletedTypeKey,
    brandKey,
    emailTemplateId: emailTemplate.id,
    inboxTemplateId: inboxTemplate.id,
    smsTemplateId: smsTemplate.id,
    chatTemplateId: chatTemplate.id,
    httpTemplateId: httpTemplate.id,
    topicKey,
    webhookId: webhook.id,
    webhookDeliveryId: delivery.id,
    broadcastId: broadcast.broadcast_id,
    eventId: trigger.events[0].event_id,
    idempotencyKey,
    scheduledEventId: scheduled.events[0].event_id,
    cancellationKey,
    apiKeyId: apiKey.id,
    memberUserId: member.userId,
    memberEmail: member.email,
    invitationId: invitation.id,
    invitationToken,
    senderDomain,
    suppressedEmail,
    dataRequestId: dataRequest.id,
    inboxItemId: inbox.items[0].id,
    pushSubscriptionId: subscription.id,
    deviceToken,
    chatDestinationId: chatDestination.id,
    chatWebhookUrl,
  };
  const values = [
    ...Object.values(world).filter((v): v is string => typeof v === 'string'),
    fx.tenantId,
    fx.ownerId,
    fx.ownerEmail,
    fx.serviceKey,
    fx.apiKeyId,
    fx.ownerToken,
    apiKey.key,
    webhook.secret,
    http.secret,
    `${tag}-http-header`,
    vapid.public_key,
    domain.dns_records[0].value,
    sso.id,
  ];
  return { ...world, markers: [...new Set(values)].sort((x, y) => y.length - x.length) };
}

/** A's markers in `text` that the request (its path and body) did not carry itself. */
function leakedMarkers(text: string, request: string): string[] {
  let rest = text;
  for (const marker of A.markers) if (request.includes(marker)) rest = rest.replaceAll(marker, '');
  return A.markers.filter((m) => rest.includes(m));
}

/** A's rows, table by table: a digest of each tenant table, the tenant row and its members' user rows. */
async function tenantRows(w: World): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const { name } of await sql<{ name: string }>(app, TENANT_TABLES)) {
    if (UNCHECKED_TABLES[name]) continue;
    const [row] = await sql<{ rows: number; digest: string }>(app, tenantRowsDigestSql(name), [w.fx.tenantId]);
    out.set(name, `${row!.rows} ${row!.digest}`);
  }
  const [tenant] = await sql<{ rows: number; digest: string }>(app, TENANT_ROW_DIGEST, [w.fx.tenantId]);
  out.set('tenants', `${tenant!.rows} ${tenant!.digest}`);
  const [users] = await sql<{ rows: number; digest: string }>(app, MEMBER_USERS_DIGEST, [w.fx.tenantId]);
  out.set('users (members)', `${users!.rows} ${users!.digest}`);
  return out;
}

/* ---------------------------------------------------------------- requests */

interface Answer {
  status: number;
  text: string;
}

/**
 * A request from a fresh client address. A text/event-stream answer never ends: its status and its
 * first chunk (the retry line, written at once) are what it says; the second is a bound, not a wait.
 */
async function send(
  method: string,
  path: string,
  token: string | undefined,
  body?: unknown,
  extraHeaders: Record<string, string> = {},
): Promise<Answer> {
  const controller = new AbortController();
  const headers: Record<string, string> = { ...extraHeaders, 'x-forwarded-for': freshIp() };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(app.url + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: controller.signal,
  });
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream'))
    return { status: res.status, text: await res.text() };
  const reader = res.body!.getReader();
  const first = await Promise.race([
    reader.read(),
    new Promise<{ value?: undefined }>((resolve) => setTimeout(() => resolve({}), 1000)),
  ]);
  controller.abort();
  return { status: res.status, text: first.value ? new TextDecoder().decode(first.value) : '' };
}

/** The GET route a path belongs to (for the credential A reads it back with). */
function getRouteOf(path: string): RouteDefinition {
  const bare = path.split('?')[0]!;
  const route = routes.find(
    (r) => r.method === 'GET' && new RegExp(`^${r.path.replace(/:[A-Za-z0-9_]+/g, '[^/]+')}$`).test(bare),
  );
  if (!route) throw new Error(`no GET route for ${path}`);
  return route;
}

/** A reads one of its objects with its own credential: the answer, without `last_used_at` (A's reads move it). */
async function readAsA(path: string): Promise<string> {
  const rule = getRouteOf(path).auth;
  const token = rule === 'service' ? A.fx.serviceKey : rule === 'contact' ? A.contactToken : A.fx.ownerToken;
  const res = await send('GET', path, token);
  if (res.status !== 200) throw new Error(`A cannot read ${path}: ${res.status} ${res.text.slice(0, 200)}`);
  return JSON.stringify(JSON.parse(res.text), (key, value) => (key === 'last_used_at' ? undefined : value));
}

/**
 * What is wrong with B's answer to an attempt on A's objects: a status other than the refusal, A's
 * markers the request did not carry, and any of A's read-backs changed since `before`.
 */
async function judge(
  res: Answer,
  expected: number | 'below 500',
  request: string,
  readBack: { paths: string[]; before: string[] },
): Promise<string[]> {
  const problems: string[] = [];
  if (expected === 'below 500' ? res.status >= 500 : res.status !== expected)
    problems.push(`answered ${res.status}, not ${expected}: ${res.text.slice(0, 200)}`);
  const leaked = leakedMarkers(res.text, request);
  if (leaked.length > 0) problems.push(`answer carries A's ${leaked.join(', ')}`);
  if (readBack.paths.length > 0) {
    tally.writes++;
    const after = await Promise.all(readBack.paths.map(readAsA));
    readBack.paths.forEach((p, i) => {
      if (after[i] !== readBack.before[i]) problems.push(`A's ${p} changed: ${readBack.before[i]} -> ${after[i]}`);
    });
  }
  return problems;
}

/** Counts one cross-tenant attempt, and a leak when anything was wrong with it. */
function count(route: string, problems: string[], failures: string[], what: string): void {
  tally.attempts++;
  tally.routes.add(route);
  if (problems.length === 0) return;
  tally.leaked++;
  failures.push(`${what}: ${problems.join('; ')}`);
}

interface Credential {
  label: string;
  token: string;
}

/**
 * Tenant B's credentials a route's rule accepts. On a contact's path, beside B's own contact token, a
 * token of tenant B whose subject is the path's contact (B cannot mint one for A's contact through the
 * API; it shows the lookups are scoped by tenant, not only by subject).
 */
function credentialsOfB(rule: AuthRule, pathContactId: string | undefined): Credential[] {
  const service = { label: 'service key', token: B.fx.serviceKey };
  const member = { label: 'member token', token: B.fx.ownerToken };
  const contact = [{ label: 'contact token', token: B.contactToken }];
  if (pathContactId && pathContactId !== B.contactId)
    contact.push({ label: "contact token naming A's contact", token: B.fx.tokenFor(pathContactId) });
  switch (rule) {
    case 'service':
      return [service];
    case 'management':
      return [service, member];
    case 'user':
      return [member];
    case 'contact':
      return contact;
    case 'either':
    case 'any':
      return [service, member, ...contact];
    case 'public':
      return [];
  }
}

/* ---------------------------------------------------------------- how to aim each route */

type Pick = (w: World) => string;

interface Aim {
  /** Each path parameter's value in a world: in A's, A's object. */
  params: Record<string, Pick>;
  /** A body the route accepts, so that the request reaches the lookup rather than the validator. */
  body?: (a: World, b: World) => unknown;
  /** GET paths that show the objects of A's the route names: A reads them back after each write. */
  readBack?: (a: World) => string[];
  /** The refusal's status when it is not 404 (a path naming A's tenant answers 403 without this). */
  refusal?: number;
  /**
   * The parameter names a kind (a push provider) and the route acts on the caller's own one: B's call
   * may succeed on B's own transport; it must still say nothing of A's and leave A's as it was.
   */
  ownKind?: true;
}

const tenant = { tenant_id: (w: World) => w.fx.tenantId };
const type = { key: (w: World) => w.typeKey };
const brand = { key: (w: World) => w.brandKey };
const domain = { domain: (w: World) => w.senderDomain };
const emailTemplate = { template_id: (w: World) => w.emailTemplateId };
const inboxTemplate = { template_id: (w: World) => w.inboxTemplateId };
const contact = { id: (w: World) => w.contactId };
const webhook = { id: (w: World) => w.webhookId };
const topic = { key: (w: World) => w.topicKey };
const broadcast = { broadcast_id: (w: World) => w.broadcastId };
const expoProvider = { provider: () => 'expo' };
const slackProvider = { provider: () => 'slack' };
const vonageProvider = { provider: () => 'vonage' };

const readType = (a: World) => [`/v1/notification-types/${a.typeKey}`];
const readBrand = (a: World) => [`/v1/brandings/${a.brandKey}`];
const readDomain = (a: World) => [`/v1/sender-domains/${a.senderDomain}`];
/** The aims of a text channel's template routes (GET, PUT, DELETE of one template). */
function messageTemplateAims(
  kind: 'sms' | 'chat' | 'http',
  idOf: (w: World) => string,
  update: () => Record<string, unknown>,
): Record<string, Aim> {
  const params = { template_id: idOf };
  const readBack = (a: World) => [`/v1/${kind}-templates/${idOf(a)}`];
  return {
    [`GET /v1/${kind}-templates/:template_id`]: { params },
    [`PUT /v1/${kind}-templates/:template_id`]: { params, body: update, readBack },
    [`DELETE /v1/${kind}-templates/:template_id`]: { params, readBack },
  };
}

const readEmailTemplate = (a: World) => [`/v1/email-templates/${a.emailTemplateId}`];
const readInboxTemplate = (a: World) => [`/v1/inbox-templates/${a.inboxTemplateId}`];
const readContact = (a: World) => [
  `/v1/contacts/${a.contactId}`,
  `/v1/contacts/${a.contactId}/preferences`,
  `/v1/contacts/${a.contactId}/push-subscriptions`,
  `/v1/contacts/${a.contactId}/chat-destinations`,
  `/v1/contacts/${a.contactId}/notifications`,
  `/v1/contacts/${a.contactId}/topics`,
];
const readTenant = () => ['/v1/auth/tenants?include_archived=1'];
const readMembers = (a: World) => [`/v1/auth/tenants/${a.fx.tenantId}/members`];
const readInvitations = (a: World) => [`/v1/auth/tenants/${a.fx.tenantId}/invitations`];
const readDataRequest = (a: World) => [`/v1/auth/tenants/${a.fx.tenantId}/data-requests/${a.dataRequestId}`];
const readWebhook = (a: World) => [`/v1/webhooks/${a.webhookId}`, `/v1/webhooks/${a.webhookId}/deliveries`];
const readTopic = (a: World) => [`/v1/topics/${a.topicKey}`, `/v1/topics/${a.topicKey}/subscribers`];
const readEvents = (a: World) => [`/v1/notifications/${a.eventId}`, `/v1/notifications/${a.scheduledEventId}`];

const AIMS: Record<string, Aim> = {
  'DELETE /v1/api-keys/:api_key_id': { params: { api_key_id: (w) => w.apiKeyId }, readBack: () => ['/v1/api-keys'] },

  'GET /v1/notification-types/:key': { params: type },
  'DELETE /v1/notification-types/:key': { params: type, readBack: readType },
  'PATCH /v1/notification-types/:key/channel-defaults': {
    params: type,
    body: () => ({ channel_defaults: { email: true, push: true } }),
    readBack: readType,
  },
  'PATCH /v1/notification-types/:key/opt-out-policy': {
    params: type,
    body: () => ({ opt_out: false }),
    readBack: readType,
  },
  'PUT /v1/notification-types/:key/variables': {
    params: type,
    body: () => ({ variables: [{ name: 'intruder', required: true }] }),
    readBack: readType,
  },
  'POST /v1/notification-types/:key/restore': {
    params: { key: (w) => w.deletedTypeKey },
    readBack: () => ['/v1/notification-types?include_deleted=1'],
  },
  'PUT /v1/notification-types/:key/workflow': {
    params: type,
    body: () => ({
      steps: [
        { kind: 'delay', seconds: 60 },
        { kind: 'channel', channel: 'email' },
      ],
    }),
    readBack: readType,
  },
  'DELETE /v1/notification-types/:key/workflow': { params: type, readBack: readType },
  'PATCH /v1/notification-types/:key/quiet-hours': {
    params: type,
    body: () => ({ bypass_quiet_hours: true }),
    readBack: readType,
  },

  'GET /v1/brandings/:key': { params: brand },
  'DELETE /v1/brandings/:key': { params: brand, readBack: readBrand },
  'PUT /v1/brandings/:key/values': {
    params: brand,
    body: () => ({ values: { name: 'Intruder' } }),
    readBack: readBrand,
  },
  'PUT /v1/brandings/:key/sender': { params: brand, body: () => ({ from_name: 'Intruder' }), readBack: readBrand },

  'GET /v1/sender-domains/:domain': { params: domain },
  'DELETE /v1/sender-domains/:domain': { params: domain, readBack: readDomain },
  'POST /v1/sender-domains/:domain/refresh': { params: domain, readBack: readDomain },

  // The contract: "422 key malformed or not a notification type" (A's type is not one of B's).
  'GET /v1/email-templates/affected-by/:notification_type_key': {
    params: { notification_type_key: (w) => w.typeKey },
    refusal: 422,
  },
  'GET /v1/email-templates/:template_id': { params: emailTemplate },
  'PUT /v1/email-templates/:template_id': {
    params: emailTemplate,
    body: () => ({ subject: 'Intruder' }),
    readBack: readEmailTemplate,
  },
  'DELETE /v1/email-templates/:template_id': { params: emailTemplate, readBack: readEmailTemplate },

  'GET /v1/inbox-templates/:template_id': { params: inboxTemplate },
  'PUT /v1/inbox-templates/:template_id': {
    params: inboxTemplate,
    body: () => ({ title: 'Intruder' }),
    readBack: readInboxTemplate,
  },
  'DELETE /v1/inbox-templates/:template_id': { params: inboxTemplate, readBack: readInboxTemplate },
  ...messageTemplateAims(
    'sms',
    (w) => w.smsTemplateId,
    () => ({ content: 'Intruder' }),
  ),
  ...messageTemplateAims(
    'chat',
    (w) => w.chatTemplateId,
    () => ({ content: 'Intruder' }),
  ),
  ...messageTemplateAims(
    'http',
    (w) => w.httpTemplateId,
    () => ({ body: { intruder: true } }),
  ),

  'GET /v1/contacts/:id': { params: contact },
  'PUT /v1/contacts/:id': { params: contact, body: () => ({ name: 'Intruder' }), readBack: readContact },
  'DELETE /v1/contacts/:id': { params: contact, readBack: readContact },
  'PUT /v1/contacts/:id/language': { params: contact, body: () => ({ language: 'fr' }), readBack: readContact },
  'PUT /v1/contacts/:id/quiet-hours': {
    params: contact,
    body: () => ({ timezone: 'Europe/Paris', quiet_hours: { start: '22:00', end: '07:00' } }),
    readBack: readContact,
  },
  'GET /v1/contacts/:id/preferences': { params: contact },
  'PUT /v1/contacts/:id/preferences': {
    params: contact,
    body: (a) => ({ type: a.typeKey, channel: 'inbox', enabled: false }),
    readBack: readContact,
  },
  'POST /v1/contacts/:id/push-subscriptions': {
    params: contact,
    body: (a) => ({ provider: 'expo', token: a.deviceToken }),
    readBack: readContact,
  },
  'GET /v1/contacts/:id/push-subscriptions': { params: contact },
  'DELETE /v1/contacts/:id/push-subscriptions/:subscription_id': {
    params: { ...contact, subscription_id: (w) => w.pushSubscriptionId },
    readBack: readContact,
  },
  'POST /v1/contacts/:id/chat-destinations': {
    params: contact,
    body: (a) => ({ provider: 'slack', webhook_url: a.chatWebhookUrl }),
    readBack: readContact,
  },
  'GET /v1/contacts/:id/chat-destinations': { params: contact },
  'DELETE /v1/contacts/:id/chat-destinations/:destination_id': {
    params: { ...contact, destination_id: (w) => w.chatDestinationId },
    readBack: readContact,
  },
  'GET /v1/contacts/:id/notifications': { params: contact },
  'PATCH /v1/contacts/:id/notifications/:notification_id': {
    params: { ...contact, notification_id: (w) => w.inboxItemId },
    body: () => ({ read: true, archived: true }),
    readBack: readContact,
  },
  'POST /v1/contacts/:id/notifications/read-all': { params: contact, readBack: readContact },
  'GET /v1/contacts/:id/stream': { params: contact },
  'GET /v1/contacts/:id/topics': { params: contact },

  'PUT /v1/push-transport/:provider': {
    params: expoProvider,
    body: (_, b) => ({ access_token: `${b.tag}-expo-token` }),
    readBack: () => ['/v1/push-transport'],
    ownKind: true,
  },
  'DELETE /v1/push-transport/:provider': {
    params: expoProvider,
    readBack: () => ['/v1/push-transport'],
    ownKind: true,
  },
  'POST /v1/push-transport/:provider/test': {
    params: expoProvider,
    body: (_, b) => ({ token: b.deviceToken }),
    readBack: () => ['/v1/push-transport'],
    ownKind: true,
  },

  'PUT /v1/sms-transport/:provider': {
    params: vonageProvider,
    body: () => ({ api_key: 'intruder', api_secret: 'intruder-secret', from: 'Intruder' }),
    readBack: () => ['/v1/sms-transport'],
    ownKind: true,
  },
  'DELETE /v1/sms-transport/:provider': {
    params: vonageProvider,
    readBack: () => ['/v1/sms-transport'],
    ownKind: true,
  },
  'POST /v1/sms-transport/:provider/test': {
    params: vonageProvider,
    body: () => ({ to: '+4915112345678' }),
    readBack: () => ['/v1/sms-transport'],
    ownKind: true,
  },

  'PUT /v1/chat-transport/:provider': {
    params: slackProvider,
    body: () => ({ bot_token: 'xoxb-000000000002-intrudertoken' }),
    readBack: () => ['/v1/chat-transport'],
    ownKind: true,
  },
  'DELETE /v1/chat-transport/:provider': {
    params: slackProvider,
    readBack: () => ['/v1/chat-transport'],
    ownKind: true,
  },
  'POST /v1/chat-transport/:provider/test': {
    params: slackProvider,
    body: () => ({ channel: 'C0INTRUDER' }),
    readBack: () => ['/v1/chat-transport'],
    ownKind: true,
  },

  'PATCH /v1/auth/tenants/:tenant_id': { params: tenant, body: () => ({ name: 'Intruder' }), readBack: readTenant },
  'POST /v1/auth/tenants/:tenant_id/archive': { params: tenant, readBack: readTenant },
  'POST /v1/auth/tenants/:tenant_id/unarchive': { params: tenant, readBack: readTenant },
  'GET /v1/auth/tenants/:tenant_id/members': { params: tenant },
  'PATCH /v1/auth/tenants/:tenant_id/members/:user_id': {
    params: { ...tenant, user_id: (w) => w.memberUserId },
    body: () => ({ role: 'admin' }),
    readBack: readMembers,
  },
  'DELETE /v1/auth/tenants/:tenant_id/members/:user_id': {
    params: { ...tenant, user_id: (w) => w.memberUserId },
    readBack: readMembers,
  },
  'POST /v1/auth/tenants/:tenant_id/invitations': {
    params: tenant,
    body: (_, b) => ({ email: `intruder.${b.tag}@example.test`, role: 'admin' }),
    readBack: readInvitations,
  },
  'GET /v1/auth/tenants/:tenant_id/invitations': { params: tenant },
  'DELETE /v1/auth/tenants/:tenant_id/invitations/:invitation_id': {
    params: { ...tenant, invitation_id: (w) => w.invitationId },
    readBack: readInvitations,
  },
  // The contract: "403 invite was sent to a different email" (A's invitee is not B's owner).
  'POST /v1/auth/invitations/:token/accept-existing': {
    params: { token: (w) => w.invitationToken },
    refusal: 403,
    readBack: (a) => [...readInvitations(a), ...readMembers(a)],
  },
  'POST /v1/auth/tenants/:tenant_id/data-requests': {
    params: tenant,
    body: () => ({ kind: 'export' }),
    readBack: readDataRequest,
  },
  'GET /v1/auth/tenants/:tenant_id/data-requests/:id': { params: { ...tenant, id: (w) => w.dataRequestId } },
  'GET /v1/auth/tenants/:tenant_id/data-requests/:id/download': {
    params: { ...tenant, id: (w) => w.dataRequestId },
  },

  'GET /v1/notifications/:event_id': { params: { event_id: (w) => w.eventId } },
  'DELETE /v1/notifications/:event_id': { params: { event_id: (w) => w.scheduledEventId }, readBack: readEvents },

  'GET /v1/webhooks/:id': { params: webhook },
  'PATCH /v1/webhooks/:id': {
    params: webhook,
    body: () => ({ description: 'Intruder', enabled: false }),
    readBack: readWebhook,
  },
  'DELETE /v1/webhooks/:id': { params: webhook, readBack: readWebhook },
  'POST /v1/webhooks/:id/rotate-secret': { params: webhook, readBack: readWebhook },
  'POST /v1/webhooks/:id/test': { params: webhook, readBack: readWebhook },
  'GET /v1/webhooks/:id/deliveries': { params: webhook },
  'POST /v1/webhooks/:id/deliveries/:delivery_id/retry': {
    params: { ...webhook, delivery_id: (w) => w.webhookDeliveryId },
    readBack: readWebhook,
  },

  'DELETE /v1/suppressions/:email': {
    params: { email: (w) => w.suppressedEmail },
    readBack: (a) => [`/v1/suppressions?email=${encodeURIComponent(a.suppressedEmail)}`],
  },

  'GET /v1/topics/:key': { params: topic },
  'DELETE /v1/topics/:key': { params: topic, readBack: readTopic },
  'POST /v1/topics/:key/subscribers': {
    params: topic,
    body: (_, b) => ({ external_ids: [`${b.tag}-intruder`] }),
    readBack: readTopic,
  },
  'DELETE /v1/topics/:key/subscribers': {
    params: topic,
    body: (a) => ({ external_ids: [a.externalId] }),
    readBack: readTopic,
  },
  'GET /v1/topics/:key/subscribers': { params: topic },

  'GET /v1/broadcasts/:broadcast_id': { params: broadcast },
  'POST /v1/broadcasts/:broadcast_id/cancel': {
    params: broadcast,
    readBack: (a) => [`/v1/broadcasts/${a.broadcastId}`, ...readEvents(a)],
  },
};

/**
 * Routes with a path parameter that names no object of a tenant's: each is public (no credential of
 * B's to aim), and its parameter is a link's own secret or a static file.
 */
const EXEMPT: Record<string, string> = {
  'GET /v1/auth/password-reset/:token': "a reset link's secret: holding it is the authority (auth tests)",
  'GET /v1/auth/invitations/:token': "an invitation link's secret, previewed without a credential",
  'POST /v1/auth/invitations/:token/accept': "an invitation link's secret, accepted by a new user",
  'GET /u/:token': 'a signed one-click unsubscribe link naming one contact (pages tests)',
  'POST /u/:token': 'a signed one-click unsubscribe link naming one contact (pages tests)',
  'GET /preferences/:token': 'a signed preference-page link naming one contact (pages tests)',
  'POST /preferences/:token': 'a signed preference-page link naming one contact (pages tests)',
  'GET /v1/auth/sso/:provider/start':
    "public sign-in: which tenant's users a provider signs in is test/resources/sso.test.ts's subject",
  'GET /v1/auth/sso/:provider/callback':
    "public sign-in: which tenant's users a provider signs in is test/resources/sso.test.ts's subject",
  'GET /invitations/:token': 'the console page an invitation links to (static HTML; its script previews)',
  'GET /console/:section': 'a static console page',
  'GET /console/assets/:file': 'a static console asset',
  'POST /callbacks/twilio/:token':
    "a provider's callback: the token names the tenant's transport, and X-Twilio-Signature its auth token (sms tests)",
  'POST /callbacks/vonage/:token':
    "a provider's callback: the token names the tenant's transport, and its signature secret (sms tests)",
};

const keyOf = (r: RouteDefinition) => `${r.method} ${r.path}`;
const paramNames = (path: string) => [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
const parameterised = routes.filter((r) => r.path.includes(':'));

/** Every non-empty choice of the parameters that take A's value (the others take B's). */
function mixes(names: string[]): string[][] {
  const out: string[][] = [];
  for (let bits = 1; bits < 1 << names.length; bits++) out.push(names.filter((_, i) => bits & (1 << i)));
  return out;
}

function pathOf(route: RouteDefinition, aim: Aim, fromA: Set<string>): string {
  return route.path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) =>
    encodeURIComponent(aim.params[name]!(fromA.has(name) ? A : B)),
  );
}

describe('every route with a path parameter', () => {
  it('is aimed at another tenant below, or exempt as a public route naming no tenant object', () => {
    const unknown = parameterised.map(keyOf).filter((k) => !AIMS[k] && !EXEMPT[k]);
    expect(unknown, 'routes with a path parameter that AIMS does not know how to aim at A').toEqual([]);
    const stale = [...Object.keys(AIMS), ...Object.keys(EXEMPT)].filter(
      (k) => !parameterised.some((r) => keyOf(r) === k),
    );
    expect(stale, 'AIMS or EXEMPT names a route the table does not have').toEqual([]);
    for (const route of parameterised) {
      const aim = AIMS[keyOf(route)];
      if (EXEMPT[keyOf(route)]) expect(route.auth, `${keyOf(route)} is exempt but takes a credential`).toBe('public');
      if (aim) expect(Object.keys(aim.params).sort()).toEqual(paramNames(route.path).sort());
    }
  });
});

const aimed = parameterised.filter((r) => AIMS[keyOf(r)]);

describe("tenant B's credentials aimed at tenant A's objects", () => {
  it.each(aimed.map((r) => [keyOf(r), r] as const))('%s', async (key, route) => {
    const aim = AIMS[key]!;
    const write = route.method !== 'GET';
    const readBack = aim.readBack?.(A) ?? [];
    if (write)
      expect(readBack.length, `${key} is a write: AIMS must say how A reads its objects back`).toBeGreaterThan(0);
    const before = await Promise.all(readBack.map(readAsA));
    const failures: string[] = [];
    for (const fromA of mixes(Object.keys(aim.params))) {
      const chosen = new Set(fromA);
      const path = pathOf(route, aim, chosen);
      const pathContactId = route.path.startsWith('/v1/contacts/:id') ? aim.params.id!(chosen.has('id') ? A : B) : '';
      const refusal = chosen.has('tenant_id') ? 403 : (aim.refusal ?? 404);
      const body = aim.body?.(A, B);
      for (const credential of credentialsOfB(route.auth, pathContactId)) {
        const res = await send(route.method, path, credential.token, body);
        const request = decodeURIComponent(path) + JSON.stringify(body ?? null);
        const expected = aim.ownKind ? 'below 500' : refusal;
        const problems = await judge(res, expected, request, { paths: write ? readBack : [], before });
        count(
          key,
          problems,
          failures,
          `${route.method} ${path} (A's ${fromA.join(' + ')}) with B's ${credential.label}`,
        );
      }
    }
    expect(failures).toEqual([]);
  });
});

/* ---------------------------------------------------------------- B's lists and own objects */

/** Query values naming a world's objects: required ones fill B's own list, all of them aim a list at A's. */
const FILTERS: Record<string, (w: World) => string[]> = {
  external_id: (w) => [w.externalId],
  type: (w) => [w.typeKey],
  notification_type_key: (w) => [w.typeKey],
  brand_key: (w) => [w.brandKey],
  broadcast_id: (w) => [w.broadcastId],
  email: (w) => [w.suppressedEmail],
  actor: (w) => [w.fx.ownerEmail, w.fx.ownerId],
  include_deleted: () => ['1'],
  include_archived: () => ['1'],
};

function queryParameters(route: RouteDefinition): { names: string[]; required: string[] } {
  if (!route.query) return { names: [], required: [] };
  const schema = z.toJSONSchema(route.query, { io: 'input', unrepresentable: 'any' }) as {
    properties?: Record<string, unknown>;
    required?: string[];
  };
  return { names: Object.keys(schema.properties ?? {}), required: schema.required ?? [] };
}

const withQuery = (path: string, query: Record<string, string>) =>
  Object.keys(query).length === 0 ? path : `${path}?${new URLSearchParams(query).toString()}`;

const lists = routes.filter((r) => r.method === 'GET' && !r.path.includes(':') && r.auth !== 'public' && !r.produces);
// B's own objects through every parameterised read (the live stream has a test of its own below).
const ownReads = aimed.filter((r) => r.method === 'GET' && r.produces !== 'text/event-stream');

describe("tenant B's lists", () => {
  it.each(lists.map((r) => [keyOf(r), r] as const))("%s never shows A's objects", async (_, route) => {
    const { names, required } = queryParameters(route);
    const base = Object.fromEntries(required.map((name) => [name, FILTERS[name]!(B)[0]!]));
    const failures: string[] = [];
    for (const credential of credentialsOfB(route.auth, undefined)) {
      const plain = withQuery(route.path, base);
      const res = await send('GET', plain, credential.token);
      tally.reads++;
      if (res.status !== 200) failures.push(`${plain} with B's ${credential.label}: ${res.status} ${res.text}`);
      const leaked = leakedMarkers(res.text, '');
      if (leaked.length > 0) failures.push(`${plain} with B's ${credential.label} shows A's ${leaked.join(', ')}`);
      // Filtered by A's objects: B's list may be empty or refuse, and still says nothing of A.
      for (const name of names.filter((n) => FILTERS[n])) {
        for (const value of FILTERS[name]!(A)) {
          const path = withQuery(route.path, { ...base, [name]: value });
          const aimedRes = await send('GET', path, credential.token);
          const problems = await judge(aimedRes, 'below 500', decodeURIComponent(path), { paths: [], before: [] });
          count(keyOf(route), problems, failures, `${path} with B's ${credential.label}`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it.each(ownReads.map((r) => [keyOf(r), r] as const))("%s of B's own object shows none of A's", async (key, route) => {
    const aim = AIMS[key]!;
    const path = pathOf(route, aim, new Set());
    const failures: string[] = [];
    for (const credential of credentialsOfB(route.auth, B.contactId)) {
      const res = await send('GET', path, credential.token);
      tally.reads++;
      if (res.status !== 200) failures.push(`with B's ${credential.label}: ${res.status} ${res.text.slice(0, 200)}`);
      const leaked = leakedMarkers(res.text, '');
      if (leaked.length > 0) failures.push(`with B's ${credential.label}: shows A's ${leaked.join(', ')}`);
    }
    expect(failures).toEqual([]);
  });
});

/* ---------------------------------------------------------------- bodies naming A's objects */

/**
 * Requests whose body or a header (not their path) names A's object, on B's own path: the answer a
 * tenant without such an object gets. Bodies that would give B an object of its own under A's name (a
 * contact with A's external id, say) are left out: each tenant has its own names, and B's lists would
 * then rightly show A's marker. These run after the lists for the same reason: B's audit log records
 * B's own cancel call with the key B sent.
 */
const BODY_AIMS: Array<{
  route: string;
  /** What of A's the body names. */
  names: string;
  path?: (b: World) => string;
  headers?: (a: World) => Record<string, string>;
  body: (a: World, b: World) => unknown;
  answer: number;
  readBack: (a: World) => string[];
}> = [
  // "404 when the contact is unknown"
  {
    route: 'POST /v1/contacts/tokens',
    names: 'external id',
    body: (a) => ({ external_id: a.externalId }),
    answer: 404,
    readBack: readContact,
  },
  // "403 not a member"
  {
    route: 'POST /v1/auth/session',
    names: 'tenant',
    body: (a) => ({ tenant_id: a.fx.tenantId, remember: true }),
    answer: 403,
    readBack: (a) => [...readTenant(), ...readMembers(a)],
  },
  // "422: type unknown or deleted"
  {
    route: 'POST /v1/notifications',
    names: 'type',
    body: (a, b) => ({ type: a.typeKey, recipients: [b.externalId], channels: ['inbox'] }),
    answer: 422,
    readBack: readType,
  },
  // A key A used is B's to use too: B's trigger is B's own, never a replay of A's answer.
  {
    route: 'POST /v1/notifications',
    names: 'idempotency key',
    headers: (a) => ({ 'idempotency-key': a.idempotencyKey }),
    body: (_, b) => ({ type: b.typeKey, recipients: [b.externalId], channels: ['inbox'] }),
    answer: 202,
    readBack: readEvents,
  },
  // "-> 200 {"canceled": n}": B has no event with A's key
  {
    route: 'POST /v1/notifications/cancel',
    names: 'cancellation key',
    body: (a) => ({ cancellation_key: a.cancellationKey }),
    answer: 200,
    readBack: readEvents,
  },
  // An unknown topic or type: a 422 located at the field.
  {
    route: 'POST /v1/broadcasts',
    names: 'topic',
    body: (a, b) => ({ type: b.typeKey, audience: { topic: a.topicKey }, channels: ['inbox'] }),
    answer: 422,
    readBack: (a) => ['/v1/broadcasts', ...readTopic(a)],
  },
  {
    route: 'POST /v1/broadcasts',
    names: 'type',
    body: (a) => ({ type: a.typeKey, audience: { all_contacts: true }, channels: ['inbox'] }),
    answer: 422,
    readBack: () => ['/v1/broadcasts'],
  },
  // "422 brand missing, no template resolves"
  {
    route: 'POST /v1/email-templates/render',
    names: 'type and brand',
    body: (a) => ({ notification_type_key: a.typeKey, brand_key: a.brandKey, variables: { order: '1' } }),
    answer: 422,
    readBack: readEmailTemplate,
  },
  // "422 ... type not live, brand missing"
  {
    route: 'POST /v1/email-templates',
    names: 'type',
    body: (a) => ({ notification_type_key: a.typeKey, subject: 'Intruder', content: '<p>Intruder</p>' }),
    answer: 422,
    readBack: () => ['/v1/email-templates'],
  },
  {
    route: 'POST /v1/email-templates',
    names: 'brand',
    body: (a, b) => ({ notification_type_key: b.typeKey, brand_key: a.brandKey, subject: 'I', content: '<p>I</p>' }),
    answer: 422,
    readBack: () => ['/v1/email-templates'],
  },
  {
    route: 'POST /v1/inbox-templates',
    names: 'type',
    body: (a) => ({ notification_type_key: a.typeKey, title: 'Intruder', content: 'Intruder' }),
    answer: 422,
    readBack: () => ['/v1/inbox-templates'],
  },
  // A type B does not have: 404, as when a path names it.
  {
    route: 'PUT /v1/contacts/:id/preferences',
    names: 'type',
    path: (b) => `/v1/contacts/${b.contactId}/preferences`,
    body: (a) => ({ type: a.typeKey, channel: 'inbox', enabled: false }),
    answer: 404,
    readBack: readType,
  },
];

describe("tenant B's requests naming A's objects in the body", () => {
  it.each(BODY_AIMS.map((aim) => [`${aim.route} naming A's ${aim.names}`, aim] as const))('%s', async (_, aim) => {
    const route = routes.find((r) => keyOf(r) === aim.route);
    expect(route, `${aim.route} is not a route`).toBeDefined();
    const path = aim.path?.(B) ?? route!.path;
    const body = aim.body(A, B);
    const readBack = aim.readBack(A);
    const before = await Promise.all(readBack.map(readAsA));
    const failures: string[] = [];
    for (const credential of credentialsOfB(route!.auth, B.contactId)) {
      const headers = aim.headers?.(A) ?? {};
      const res = await send(route!.method, path, credential.token, body, headers);
      const problems = await judge(res, aim.answer, JSON.stringify([body, headers]), { paths: readBack, before });
      count(aim.route, problems, failures, `with B's ${credential.label}`);
    }
    expect(failures).toEqual([]);
  });
});

describe("after all of B's attempts", () => {
  it("A's rows in every tenant table are as they were", async () => {
    expect([...rowsBefore.keys()]).toEqual(expect.arrayContaining(['contacts', 'inbox_items', 'webhook_endpoints']));
    const after = await tenantRows(A);
    const changed = [...after.keys()].filter((table) => after.get(table) !== rowsBefore.get(table));
    expect(changed).toEqual([]);
    expect(after.size).toBe(rowsBefore.size);
  });
});

/* ---------------------------------------------------------------- the live stream */

/** An open text/event-stream response: what it has sent so far. */
async function openStream(path: string, token: string): Promise<{ status: number; text: string; close(): void }> {
  const controller = new AbortController();
  const res = await fetch(app.url + path, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'x-forwarded-for': freshIp() },
    signal: controller.signal,
  });
  const stream = { status: res.status, text: '', close: () => controller.abort() };
  const decoder = new TextDecoder();
  void (async () => {
    try {
      for await (const chunk of res.body!) stream.text += decoder.decode(chunk, { stream: true });
    } catch {
      // aborted by close()
    }
  })();
  return stream;
}

async function triggerInbox(w: World, order: string): Promise<void> {
  const res = await own(w.fx.serviceKey, 'POST', '/v1/notifications', {
    type: w.typeKey,
    recipients: [w.externalId],
    variables: { order },
    channels: ['inbox'],
  });
  await waitForFinal(app, [res.events[0].event_id]);
}

describe("tenant B's live stream", () => {
  it("carries B's notifications and none of A's", async () => {
    const stream = await openStream(`/v1/contacts/${B.contactId}/stream`, B.contactToken);
    try {
      expect(stream.status).toBe(200);
      // B's first notification arriving shows the stream is live before A's is sent.
      await triggerInbox(B, `${B.tag}-first`);
      await eventually(() => stream.text.includes(`${B.tag}-first`), { message: "B's stream got nothing" });
      await triggerInbox(A, `${A.tag}-live`);
      await triggerInbox(B, `${B.tag}-second`);
      await eventually(() => stream.text.includes(`${B.tag}-second`), { message: "B's stream stopped" });
      tally.reads++;
      expect(leakedMarkers(stream.text, '')).toEqual([]);
    } finally {
      stream.close();
    }
  });
});

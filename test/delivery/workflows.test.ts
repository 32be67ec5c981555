// Workflows through real HTTP, the real worker and a real SMTP server: the workflow routes (set,
// remove, the checks of a PUT), each step kind (channel with conditions from each source, delay by
// seconds and until a variable, digest, throttle), and the event status showing each step.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/eventually.ts';
import {
  createTenantFixture,
  expectManagementOnly,
  expectValidationError,
  sql,
  sqlOne,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';
import { startSmtpPeer, type SmtpPeer } from '../support/smtp-peer.ts';
import { EVENT_INBOX_ITEM } from '../../server/delivery/workflow.ts';

let app: TestApp;
let smtp: SmtpPeer;
let acme: TenantFixture;
let other: TenantFixture;

async function api(method: string, path: string, body?: unknown, token = acme.serviceKey) {
  const res = await app.request(method, path, { token, body });
  if (res.status >= 400) throw new Error(`${method} ${path} -> ${res.status} ${res.text}`);
  return res.body;
}

/** Creates a type with inbox and email on, an inbox and an email template, and the workflow. */
async function workflowType(key: string, steps: unknown[], templates: { title?: string; subject?: string } = {}) {
  await api('POST', '/v1/notification-types', { key, channel_defaults: { inbox: true, email: true } });
  await api('POST', '/v1/inbox-templates', {
    notification_type_key: key,
    title: templates.title ?? `${key} {{ n }}`,
    content: 'body',
  });
  await api('POST', '/v1/email-templates', {
    notification_type_key: key,
    subject: templates.subject ?? `${key} {{ n }}`,
    content: '<p>hi</p>',
  });
  return api('PUT', `/v1/notification-types/${key}/workflow`, { steps });
}

async function trigger(
  type: string,
  recipient: unknown,
  variables: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<string> {
  const res = await api('POST', '/v1/notifications', { type, recipients: [recipient], variables, ...extra });
  return res.events[0].event_id;
}

async function event(id: string) {
  return api('GET', `/v1/notifications/${id}`);
}

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
): Promise<T> {
  return (await eventually(async () => (await probe()) || false, {
    timeoutMs,
    message: `timed out waiting for ${what}`,
  })) as T;
}

const stepSummary = (view: { steps: Array<{ kind: string; status: string; reason: string | null }> }) =>
  view.steps.map((s) => `${s.kind}:${s.status}${s.reason ? `:${s.reason}` : ''}`);

const mailsTo = (address: string) => smtp.messages.filter((m) => m.envelope.to.includes(address));

beforeAll(async () => {
  smtp = await startSmtpPeer();
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  other = await createTenantFixture(app, 'Other');
  await api('PUT', '/v1/email-transport', {
    host: smtp.host,
    port: smtp.port,
    secure: false,
    from_email: 'robot@acme.test',
    from_name: 'Acme',
  });
  await api('PUT', '/v1/brandings/default/values', { values: { name: 'Acme', tier: 'gold' } });
});

afterAll(async () => {
  await app?.close();
  await smtp?.close();
});

describe('PUT /v1/notification-types/{key}/workflow', () => {
  const steps = [
    { kind: 'channel', channel: 'inbox' },
    { kind: 'delay', seconds: 60 },
    { kind: 'channel', channel: 'email', if: 'inbox.read == false' },
  ];

  it('sets the workflow and shows it on the type; DELETE goes back to the default', async () => {
    await api('POST', '/v1/notification-types', { key: 'wf_routes' });
    const res = await app.request('PUT', '/v1/notification-types/wf_routes/workflow', {
      token: acme.serviceKey,
      body: { steps },
    });
    expect(res.status).toBe(200);
    expect(res.body.workflow).toEqual({ steps });
    expect((await api('GET', '/v1/notification-types/wf_routes')).workflow).toEqual({ steps });
    const removed = await app.request('DELETE', '/v1/notification-types/wf_routes/workflow', {
      token: acme.serviceKey,
    });
    expect(removed.status).toBe(204);
    expect((await api('GET', '/v1/notification-types/wf_routes')).workflow).toBeNull();
  });

  it('accepts a console admin, refuses other credentials, and is scoped to the tenant', async () => {
    const res = await app.request('PUT', '/v1/notification-types/wf_routes/workflow', {
      token: acme.ownerToken,
      body: { steps },
    });
    expect(res.status).toBe(200);
    await expectManagementOnly(app, acme, 'PUT', '/v1/notification-types/wf_routes/workflow', { steps });
    await expectManagementOnly(app, acme, 'DELETE', '/v1/notification-types/wf_routes/workflow');
    expect(
      (
        await app.request('PUT', '/v1/notification-types/wf_routes/workflow', {
          token: other.serviceKey,
          body: { steps },
        })
      ).status,
    ).toBe(404);
    expect(
      (await app.request('DELETE', '/v1/notification-types/wf_routes/workflow', { token: other.serviceKey })).status,
    ).toBe(404);
    expect(
      (await app.request('PUT', '/v1/notification-types/nope/workflow', { token: acme.serviceKey, body: { steps } }))
        .status,
    ).toBe(404);
  });

  it.each([
    ['an unknown kind', [{ kind: 'teleport' }], ['body', 'steps', 0, 'kind']],
    ['21 steps', Array.from({ length: 21 }, () => ({ kind: 'channel', channel: 'inbox' })), ['body', 'steps']],
    [
      'negative seconds',
      [
        { kind: 'channel', channel: 'inbox' },
        { kind: 'delay', seconds: -5 },
      ],
      ['body', 'steps', 1, 'seconds'],
    ],
    [
      'more than 30 days',
      [
        { kind: 'channel', channel: 'inbox' },
        { kind: 'delay', seconds: 31 * 86400 },
      ],
      ['body', 'steps', 1, 'seconds'],
    ],
    [
      'a delay with neither seconds nor until',
      [{ kind: 'channel', channel: 'inbox' }, { kind: 'delay' }],
      ['body', 'steps', 1],
    ],
    ['bad Liquid', [{ kind: 'channel', channel: 'inbox', if: 'inbox.read ==' }], ['body', 'steps', 0, 'if']],
    ['a condition with tags', [{ kind: 'channel', channel: 'inbox', if: 'x %}{% y' }], ['body', 'steps', 0, 'if']],
    ['an unknown channel', [{ kind: 'channel', channel: 'pigeon' }], ['body', 'steps', 0, 'channel']],
    [
      'a channel twice',
      [
        { kind: 'channel', channel: 'inbox' },
        { kind: 'channel', channel: 'inbox' },
      ],
      ['body', 'steps', 1, 'channel'],
    ],
    ['no channel step', [{ kind: 'delay', seconds: 5 }], ['body', 'steps']],
    [
      'a digest key that is not a placeholder',
      [
        { kind: 'digest', window_seconds: 60, key: '{% if %}' },
        { kind: 'channel', channel: 'inbox' },
      ],
      ['body', 'steps', 0, 'key'],
    ],
    [
      'a throttle without a limit',
      [
        { kind: 'throttle', window_seconds: 60 },
        { kind: 'channel', channel: 'inbox' },
      ],
      ['body', 'steps', 0, 'limit'],
    ],
    ['an unknown field', [{ kind: 'channel', channel: 'inbox', colour: 'red' }], ['body', 'steps', 0]],
  ])('refuses %s with 422 naming the step', async (_name, badSteps, loc) => {
    const res = await app.request('PUT', '/v1/notification-types/wf_routes/workflow', {
      token: acme.serviceKey,
      body: { steps: badSteps },
    });
    expectValidationError(res, loc as Array<string | number>);
  });

  it('refuses a malformed body with 422', async () => {
    expectValidationError(
      await app.request('PUT', '/v1/notification-types/wf_routes/workflow', {
        token: acme.serviceKey,
        body: { steps: 'inbox' },
      }),
      ['body', 'steps'],
    );
    expectValidationError(
      await app.request('PUT', '/v1/notification-types/wf_routes/workflow', {
        token: acme.serviceKey,
        rawBody: '{"steps": [',
      }),
      ['body'],
    );
  });
});

describe('channel steps and conditions', () => {
  it('delivers each channel step in order and shows the steps on the event', async () => {
    await workflowType('wf_two', [
      { kind: 'channel', channel: 'inbox' },
      { kind: 'channel', channel: 'email' },
    ]);
    const id = await trigger('wf_two', { external_id: 'two_1', email: 'two_1@example.test' }, { n: 1 });
    await waitForFinal(app, [id]);
    const view = await event(id);
    expect(view.status).toBe('delivered');
    expect(stepSummary(view)).toEqual(['channel:done', 'channel:done']);
    expect(view.deliveries.map((d: { channel: string; status: string }) => `${d.channel}:${d.status}`).sort()).toEqual([
      'email:sent',
      'inbox:delivered',
    ]);
    await smtp.waitFor((m) => m.envelope.to.includes('two_1@example.test'));
  });

  it("records a channel step the trigger's channels leave out as a delivery skipped not_requested", async () => {
    await workflowType('wf_narrowed', [
      { kind: 'channel', channel: 'inbox' },
      { kind: 'channel', channel: 'email' },
    ]);
    const id = await trigger(
      'wf_narrowed',
      { external_id: 'narrowed_1', email: 'narrowed_1@example.test' },
      { n: 1 },
      { channels: ['inbox'] },
    );
    await waitForFinal(app, [id]);
    const view = await event(id);
    expect(stepSummary(view)).toEqual(['channel:done', 'channel:skipped:not_requested']);
    expect(
      view.deliveries
        .map((d: { channel: string; status: string; reason: string | null }) => `${d.channel}:${d.status}:${d.reason}`)
        .sort(),
    ).toEqual(['email:skipped:not_requested', 'inbox:delivered:null']);
    expect(view.status).toBe('delivered');
    expect(mailsTo('narrowed_1@example.test')).toHaveLength(0);
  });

  it('shows a channel step whose channel the contact opted out of as skipped with that reason', async () => {
    const id = await trigger('wf_narrowed', { external_id: 'narrowed_2', email: 'narrowed_2@example.test' }, { n: 2 });
    await waitForFinal(app, [id]);
    const contactId = (await event(id)).contact_id;
    const res = await app.request('PUT', `/v1/contacts/${contactId}/preferences`, {
      token: acme.serviceKey,
      body: { type: 'wf_narrowed', channel: 'email', enabled: false },
    });
    expect(res.status, res.text).toBeLessThan(300);
    const opted = await trigger('wf_narrowed', { external_id: 'narrowed_2' }, { n: 3 });
    await waitForFinal(app, [opted]);
    expect(stepSummary(await event(opted))).toEqual(['channel:done', 'channel:skipped:opted_out']);
  });

  it.each([
    ['vars', 'vars.plan == "pro"', { plan: 'pro' }, { plan: 'free' }],
    ['contact', 'contact.email contains "@vip."', 'vip', 'plain'],
    ['brand', 'brand.tier == "gold"', null, null],
  ])('evaluates a condition on %s', async (source, condition, passing, failing) => {
    const key = `wf_cond_${source}`;
    await workflowType(key, [
      { kind: 'channel', channel: 'inbox' },
      { kind: 'channel', channel: 'email', if: condition },
    ]);
    const recipient = (tag: unknown) =>
      source === 'contact'
        ? { external_id: `${key}_${tag}`, email: `${key}@${tag}.example.test` }
        : { external_id: `${key}_x`, email: `${key}@example.test` };
    const variables = (v: unknown) => (source === 'vars' ? { n: 1, ...(v as object) } : { n: 1 });
    const yes = await trigger(key, recipient(passing), variables(passing));
    await waitForFinal(app, [yes]);
    expect(stepSummary(await event(yes))).toEqual(['channel:done', 'channel:done']);
    if (source === 'brand') {
      // The brand's values change: the same condition now fails.
      await api('PUT', '/v1/brandings/default/values', { values: { name: 'Acme', tier: 'silver' } });
    }
    const no = await trigger(key, recipient(failing), variables(failing));
    await waitForFinal(app, [no]);
    const view = await event(no);
    expect(stepSummary(view)).toEqual(['channel:done', 'channel:skipped:condition_false']);
    expect(view.deliveries.map((d: { channel: string }) => d.channel)).toEqual(['inbox']);
    expect(view.status).toBe('delivered');
    if (source === 'brand')
      await api('PUT', '/v1/brandings/default/values', { values: { name: 'Acme', tier: 'gold' } });
  });

  it('sends the email an interval later only when the inbox item is still unread', async () => {
    await workflowType('wf_unread', [
      { kind: 'channel', channel: 'inbox' },
      { kind: 'delay', seconds: 2 },
      { kind: 'channel', channel: 'email', if: 'inbox.read == false' },
    ]);
    const reader = await trigger('wf_unread', { external_id: 'unread_reader', email: 'reader@example.test' }, { n: 1 });
    const ignorer = await trigger(
      'wf_unread',
      { external_id: 'unread_ignorer', email: 'ignorer@example.test' },
      { n: 2 },
    );
    // Both wait in the delay after their inbox step; the reader reads the item meanwhile.
    const waiting = await waitFor('the delays', async () => {
      const views = await Promise.all([event(reader), event(ignorer)]);
      return views.every((v) => v.steps[1]?.status === 'waiting') && views;
    });
    expect(waiting[0].status).toBe('processing');
    expect(Date.parse(waiting[0].steps[1].run_at)).toBeGreaterThan(Date.now());
    const [item] = await sql<{ id: string; contact_id: string }>(
      app,
      `SELECT id::text, contact_id::text FROM inbox_items WHERE event_id = $1`,
      [reader],
    );
    const read = await app.request('PATCH', `/v1/contacts/${item!.contact_id}/notifications/${item!.id}`, {
      token: acme.tokenFor(item!.contact_id),
      body: { read: true },
    });
    expect(read.status).toBe(200);
    await waitForFinal(app, [reader, ignorer]);
    expect(stepSummary(await event(reader))).toEqual(['channel:done', 'delay:done', 'channel:skipped:condition_false']);
    expect(stepSummary(await event(ignorer))).toEqual(['channel:done', 'delay:done', 'channel:done']);
    await smtp.waitFor((m) => m.envelope.to.includes('ignorer@example.test'));
    expect(mailsTo('reader@example.test')).toHaveLength(0);
  });
  it("finds the event's inbox item for a condition by index, not by reading every inbox item", async () => {
    const id = await trigger('wf_unread', { external_id: 'unread_plan', email: 'plan@example.test' }, { n: 3 });
    const contactId = (await sqlOne<{ contact_id: string }>(app, `SELECT contact_id::text FROM events WHERE id = $1`, [
      id,
    ]))!.contact_id;
    // Enough items of other events that reading them all costs more than two index probes.
    await sql(
      app,
      `INSERT INTO inbox_items (id, tenant_id, contact_id, type_key, title) SELECT gen_random_uuid(), $1, $2, 'filler', 'filler' FROM generate_series(1, 3000)`,
      [acme.tenantId, contactId],
    );
    try {
      await sql(app, 'ANALYZE inbox_items');
      const plan = (await sqlOne<{ 'QUERY PLAN': unknown }>(
        app,
        `EXPLAIN (FORMAT JSON) ${EVENT_INBOX_ITEM.replace('$1', `'${id}'::uuid`)}`,
      ))!['QUERY PLAN'];
      const scans = JSON.stringify(plan).match(/"Node Type":"[^"]*Scan","[^}]*?"Relation Name":"inbox_items"/g) ?? [];
      expect(scans.length).toBe(1);
      expect(scans[0]).not.toContain('Seq Scan');
    } finally {
      await sql(app, `DELETE FROM inbox_items WHERE contact_id = $1 AND type_key = 'filler'`, [contactId]);
    }
  });
});

describe('delay steps', () => {
  it('waits until a time taken from a variable; a past time goes on at once; an unreadable one fails the step', async () => {
    await workflowType('wf_until', [
      { kind: 'delay', until: '{{ remind_at }}' },
      { kind: 'channel', channel: 'inbox' },
    ]);
    const soon = new Date(Date.now() + 1500).toISOString();
    const later = await trigger('wf_until', 'until_1', { n: 1, remind_at: soon });
    const waiting = await waitFor('the wait', async () => {
      const view = await event(later);
      return view.steps[0]?.status === 'waiting' && view;
    });
    expect(waiting.steps[0].run_at).toBe(soon);
    const past = await trigger('wf_until', 'until_2', { n: 2, remind_at: '2020-01-01T00:00:00Z' });
    const bad = await trigger('wf_until', 'until_3', { n: 3, remind_at: 'next tuesday' });
    await waitForFinal(app, [later, past, bad]);
    expect(stepSummary(await event(later))).toEqual(['delay:done', 'channel:done']);
    expect(stepSummary(await event(past))).toEqual(['delay:done', 'channel:done']);
    const failed = await event(bad);
    expect(stepSummary(failed)).toEqual(['delay:failed:invalid_until', 'channel:canceled']);
    expect(failed.status).toBe('failed');
    expect(failed.deliveries).toEqual([]);
  });
});

describe('digest steps', () => {
  it('gathers the events of a window into the opener; the others end digested and point to it', async () => {
    await workflowType(
      'wf_digest',
      [
        { kind: 'digest', window_seconds: 2, key: '{{ thread }}', max_events: 2 },
        { kind: 'channel', channel: 'inbox' },
      ],
      {
        title:
          '{{ digest.count }} new in {{ thread }} ({{ digest.events.size }} listed, first {{ digest.events.first.variables.n }})',
      },
    );
    const ids: string[] = [];
    for (let n = 1; n <= 3; n++) ids.push(await trigger('wf_digest', 'digest_reader', { n, thread: 'a' }));
    const otherKey = await trigger('wf_digest', 'digest_reader', { n: 9, thread: 'b' });
    await waitForFinal(app, [...ids, otherKey], 30_000);
    const views = await Promise.all(ids.map(event));
    // The worker runs them side by side: whichever came first opened the window.
    const openers = views.filter((v) => v.status === 'delivered');
    expect(openers).toHaveLength(1);
    const opener = openers[0]!;
    const digested = views.filter((v) => v.status === 'digested');
    expect(digested.map((v) => v.digest_event_id)).toEqual([opener.event_id, opener.event_id]);
    for (const view of digested) expect(stepSummary(view)).toEqual(['digest:done:digested', 'channel:canceled']);
    expect(stepSummary(opener)).toEqual(['digest:done', 'channel:done']);
    const titles = await sql<{ title: string; event_id: string }>(
      app,
      `SELECT title, event_id::text FROM inbox_items WHERE event_id = ANY($1::uuid[])`,
      [[...ids, otherKey]],
    );
    expect(titles.map((t) => t.title).sort()).toEqual([
      '1 new in b (1 listed, first 9)',
      `3 new in a (2 listed, first ${opener.variables.n})`,
    ]);
  });

  it('opens a new window for an event after the window has closed', async () => {
    const first = await trigger('wf_digest', 'digest_edge', { n: 1, thread: 'a' });
    await waitForFinal(app, [first], 30_000);
    const second = await trigger('wf_digest', 'digest_edge', { n: 2, thread: 'a' });
    await waitForFinal(app, [second], 30_000);
    expect((await event(second)).status).toBe('delivered');
    expect((await event(second)).digest_event_id).toBeNull();
    const titles = await sql<{ title: string }>(
      app,
      `SELECT title FROM inbox_items WHERE event_id = ANY($1::uuid[]) ORDER BY created_at`,
      [[first, second]],
    );
    expect(titles.map((t) => t.title)).toEqual(['1 new in a (1 listed, first 1)', '1 new in a (1 listed, first 2)']);
  });
});

describe('throttle steps', () => {
  it('lets `limit` events through per window, contact and key; the rest end skipped, throttled', async () => {
    await workflowType('wf_throttle', [
      { kind: 'throttle', limit: 2, window_seconds: 3600, key: '{{ project }}' },
      { kind: 'channel', channel: 'inbox' },
    ]);
    const outcomes: string[] = [];
    for (const [recipient, project] of [
      ['thr_1', 'p'],
      ['thr_1', 'p'],
      ['thr_1', 'p'],
      ['thr_1', 'q'],
      ['thr_2', 'p'],
    ] as const) {
      const id = await trigger('wf_throttle', recipient, { n: 1, project });
      await waitForFinal(app, [id]);
      const view = await event(id);
      outcomes.push(`${view.status} ${stepSummary(view).join(',')}`);
    }
    expect(outcomes).toEqual([
      'delivered throttle:done,channel:done',
      'delivered throttle:done,channel:done',
      'skipped throttle:skipped:throttled,channel:canceled',
      'delivered throttle:done,channel:done', // another key
      'delivered throttle:done,channel:done', // another contact
    ]);
  });
});

describe('step keys from contact fields', () => {
  it('a key naming a field the contact does not have is unfilled (the step fails), not an empty key shared by every such contact', async () => {
    await workflowType('wf_key_contact', [
      { kind: 'throttle', limit: 5, window_seconds: 3600, key: '{{ contact.name }}' },
      { kind: 'channel', channel: 'inbox' },
    ]);
    const named = await trigger('wf_key_contact', { external_id: 'key_named', name: 'Ann' }, { n: 1 });
    const nameless = await trigger('wf_key_contact', 'key_nameless', { n: 1 });
    await waitForFinal(app, [named, nameless]);
    expect(stepSummary(await event(named))).toEqual(['throttle:done', 'channel:done']);
    expect(stepSummary(await event(nameless))).toEqual(['throttle:failed:unfilled_key', 'channel:canceled']);
  });
});

describe('throttle windows', () => {
  it('lets events through again once the window has passed', async () => {
    await workflowType('wf_throttle_window', [
      { kind: 'throttle', limit: 1, window_seconds: 2 },
      { kind: 'channel', channel: 'inbox' },
    ]);
    const statuses: string[] = [];
    for (const pause of [0, 0, 2100]) {
      await new Promise((r) => setTimeout(r, pause)); // the throttle window passing is what is tested
      const id = await trigger('wf_throttle_window', 'thr_window', { n: 1 });
      await waitForFinal(app, [id]);
      statuses.push((await event(id)).status);
    }
    expect(statuses).toEqual(['delivered', 'skipped', 'delivered']);
  });
});

describe('the activity log', () => {
  it('shows the steps of each event', async () => {
    const page = await api('GET', '/v1/notifications?type=wf_throttle&limit=5');
    expect(page.items.length).toBeGreaterThan(0);
    for (const item of page.items)
      expect(item.steps.map((s: { kind: string }) => s.kind)).toEqual(['throttle', 'channel']);
  });
});

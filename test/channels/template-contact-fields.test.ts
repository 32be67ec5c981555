// The template rule for contact fields: `{{ contact.name }}` for a contact without a name is an
// unfilled slot, as a missing variable is (422 in a preview, a failed delivery naming the slot at send
// time), never an empty string; a template says what to show instead with `default` or an `if`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  createTenantFixture,
  expectValidationError,
  insertInboxTemplate,
  insertNotificationType,
  sql,
  waitForFinal,
  type TenantFixture,
} from '../support/fixtures.ts';

let app: TestApp;
let acme: TenantFixture;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app);
  await insertNotificationType(app, acme.tenantId, { key: 'greeting' });
  await insertInboxTemplate(app, acme.tenantId, {
    type: 'greeting',
    title: 'Hi {{ contact.name }}',
    content: 'Sent to {{ contact.external_id }}',
  });
  await insertNotificationType(app, acme.tenantId, { key: 'greeting_fallback' });
  await insertInboxTemplate(app, acme.tenantId, {
    type: 'greeting_fallback',
    title: 'Hi {{ contact.name | default: "there" }}',
    content: '{% if contact.email %}Mail: {{ contact.email }}{% else %}No mail{% endif %}',
  });
  const type = await app.request('POST', '/v1/notification-types', {
    token: acme.serviceKey,
    body: { key: 'preview' },
  });
  expect(type.status).toBe(201);
  const template = await app.request('POST', '/v1/email-templates', {
    token: acme.serviceKey,
    body: {
      notification_type_key: 'preview',
      subject: 'For {{ contact.name }}',
      content: '<p>{{ contact.email | default: "no email" }}</p>',
    },
  });
  expect(template.status).toBe(201);
});
afterAll(async () => {
  await app?.close();
});

async function deliver(
  type: string,
  recipients: unknown[],
): Promise<Array<{ status: string; title: string | null; body: string | null; last_error: string | null }>> {
  const res = await app.request('POST', '/v1/notifications', { token: acme.serviceKey, body: { type, recipients } });
  expect(res.status).toBe(202);
  const ids = res.body.events.map((e: { event_id: string }) => e.event_id);
  await waitForFinal(app, ids);
  return sql(
    app,
    `SELECT d.status, i.title, i.body, d.last_error
       FROM unnest($1::uuid[]) WITH ORDINALITY AS e(id, n)
       JOIN deliveries d ON d.event_id = e.id LEFT JOIN inbox_items i ON i.event_id = e.id
      ORDER BY e.n`,
    [ids],
  );
}

describe('{{ contact.* }} at send time', () => {
  it('fails the delivery of a contact without the field, naming the slot, and delivers the others', async () => {
    const [named, nameless] = await deliver('greeting', [{ external_id: 'ann', name: 'Ann' }, 'nameless']);
    expect(named).toEqual({ status: 'delivered', title: 'Hi Ann', body: 'Sent to ann', last_error: null });
    expect(nameless).toMatchObject({ status: 'failed', title: null });
    expect(nameless!.last_error).toBe('template slot "contact.name" is not filled: the contact has no name');
  });

  it('a field set to null is as unfilled as one never given', async () => {
    const [cleared] = await deliver('greeting', [{ external_id: 'cleared', name: null }]);
    expect(cleared!.last_error).toContain('"contact.name"');
  });

  it('renders what the template gives instead with default or if', async () => {
    const [nameless, named] = await deliver('greeting_fallback', [
      'fallback_1',
      { external_id: 'fallback_2', name: 'Bo', email: 'bo@example.test' },
    ]);
    expect(nameless).toEqual({ status: 'delivered', title: 'Hi there', body: 'No mail', last_error: null });
    expect(named).toEqual({ status: 'delivered', title: 'Hi Bo', body: 'Mail: bo@example.test', last_error: null });
  });
});

describe('{{ contact.* }} in a preview', () => {
  const render = (contact?: Record<string, unknown>) =>
    app.request('POST', '/v1/email-templates/render', {
      token: acme.serviceKey,
      body: { notification_type_key: 'preview', ...(contact ? { contact } : {}) },
    });

  it('answers 422 naming the contact field the sample contact lacks', async () => {
    for (const contact of [undefined, { email: 'ann@example.test' }, { name: null }]) {
      const res = await render(contact);
      expectValidationError(res, ['body', 'contact', 'name']);
      expect(res.body.detail[0].msg).toContain('the contact has no name');
    }
  });

  it('renders with the field given, and the default where the template has one', async () => {
    const res = await render({ name: 'Ann' });
    expect(res.status).toBe(200);
    expect(res.body.subject).toBe('For Ann');
    expect(res.body.html).toContain('no email');
  });
});

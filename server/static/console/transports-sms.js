// The SMS providers of the Transports page: Twilio, Vonage and a generic HTTP gateway, asked in
// priority order (the next one takes a message the first cannot send for now). Secrets are write-only.
import { api } from './api.js';
import { h, field, copyText } from './dom.js';
import { panel, actionForm, parseJsonObject } from './kit.js';
import { orderControls, secretInput, providerTable, testForm, providerDetails } from './transport-parts.js';

export const SMS_NAMES = { twilio: 'Twilio', vonage: 'Vonage', http: 'HTTP gateway' };

const text = (name, value, placeholder) => h('input', { name, value: value ?? '', placeholder, autocomplete: 'off', spellcheck: 'false' });
const json = (name, value) => {
  const area = h('textarea', { name, rows: 4, class: 'code', spellcheck: 'false' });
  if (value !== undefined && value !== null) area.value = JSON.stringify(value, null, 2);
  return area;
};

/** Each provider's fields: [control, label, hint, how its value goes in the body]. */
const FORMS = {
  twilio: (s, stored) => [
    [text('account_sid', s.account_sid, 'AC…'), 'Account SID'],
    [secretInput('auth_token', stored), 'Auth token', 'Write-only: never shown again.'],
    [text('from', s.from, '+15005550006'), 'From (number or sender id)', 'Or a Messaging Service below.'],
    [text('messaging_service_sid', s.messaging_service_sid, 'MG…'), 'Messaging Service SID'],
  ],
  vonage: (s, stored) => [
    [text('api_key', s.api_key), 'API key'],
    [secretInput('api_secret', stored), 'API secret', 'Write-only: never shown again.'],
    [text('from', s.from, 'Acme'), 'From (number or sender id)'],
    [secretInput('signature_secret', stored), 'Signature secret (optional)', 'Write-only: when set, receipts and replies must carry a valid Vonage signature.'],
  ],
  http: (s, stored) => [
    [text('url', s.url, 'https://sms.example.net/send'), 'Gateway URL'],
    [h('select', { name: 'method' }, ['POST', 'PUT'].map((m) => h('option', { value: m, selected: (s.method ?? 'POST') === m }, m))), 'Method'],
    [secretInput('headers', stored, 'textarea'), 'Headers (JSON)', 'Write-only (they often hold a key): never shown again. Empty keeps the stored ones.', 'json'],
    [json('body', s.body), 'Body (JSON template over {{ to }} and {{ text }})', 'Like {"to": "{{ to }}", "message": "{{ text }}"}.', 'json'],
    [text('message_id_path', s.message_id_path, 'data.id'), 'Message id path (optional)', "Where the gateway's JSON answer holds its message id."],
  ],
};

function smsForm(provider, entry, rerender) {
  const rows = FORMS[provider](entry?.settings ?? {}, Boolean(entry));
  const order = orderControls(entry);
  const name = SMS_NAMES[provider];
  return actionForm([h('div', { class: 'grid top' }, rows.map(([control, label, hint]) => field(label, control, hint))), order.fields], `Save ${name}`, async () => {
    const body = order.body();
    for (const [control, label, , kind] of rows) {
      if (!control.value.trim()) continue;
      body[control.name] = kind === 'json' ? parseJsonObject(control.value, label.replace(/ \(.*/, '')) : control.value.trim();
    }
    await api('PUT', `/v1/sms-transport/${provider}`, body);
    await rerender();
  });
}

/** Where a provider posts delivery receipts and inbound replies (STOP): set it as the number's webhook. */
function callbackUrls(entries) {
  const withUrl = entries.filter((e) => e.callback_url);
  if (!withUrl.length) return null;
  return h('div', { class: 'callbacks' }, withUrl.map((e) => {
    const copy = h('button', { type: 'button', onclick: () => copyText(copy, e.callback_url) }, 'Copy');
    return h('p', { class: 'hint' }, `${SMS_NAMES[e.provider] ?? e.provider}: set this as the number's status callback and inbound webhook (delivery receipts, STOP and START replies): `, h('code', {}, e.callback_url), ' ', copy);
  }));
}

export function smsPanel(entries, rerender) {
  const byProvider = Object.fromEntries(entries.map((e) => [e.provider, e]));
  return panel(
    'SMS providers',
    h('p', { class: 'hint' }, "Asked in order, lowest first: a provider that fails for now (a timeout, 429, 5xx) hands the message to the next. Messages go to the contact's phone number."),
    providerTable({ entries, names: SMS_NAMES, path: '/v1/sms-transport', rerender, empty: 'No SMS provider yet: SMS deliveries are skipped (no transport).', what: 'SMS provider' }),
    callbackUrls(entries),
    entries.length ? h('div', { class: 'row' }, testForm({ entries, names: SMS_NAMES, path: '/v1/sms-transport', targets: () => [['to', 'Send a test SMS to', '+4915112345678']], label: 'Send test SMS' })) : null,
    Object.keys(FORMS).map((provider) => providerDetails(SMS_NAMES[provider], byProvider[provider], smsForm(provider, byProvider[provider], rerender))),
  );
}

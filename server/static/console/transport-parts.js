// Pieces the failover transports (SMS providers, chat bots) share: the order they are asked in
// (priority, enabled), their list in that order, and a test send through one of them with its answer.
import { api } from './api.js';
import { h, mount, field, formatTime, pill, table } from './dom.js';
import { actionForm, actionButton } from './kit.js';

/** The priority and enabled controls of a provider's form, and the part of the body they give. */
export function orderControls(entry) {
  const priority = h('input', { name: 'priority', type: 'number', min: 0, max: 1000, step: 1, value: entry?.priority ?? '', placeholder: '0', inputmode: 'numeric' });
  const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: entry ? entry.enabled : true });
  return {
    fields: h('div', { class: 'grid top' }, field('Priority', priority, 'Lower is asked first.'), h('div', { class: 'field check-field' }, h('label', { class: 'check' }, enabled, ' Ask this provider'))),
    body() {
      const body = { enabled: enabled.checked };
      if (priority.value !== '') body.priority = Number(priority.value);
      return body;
    },
  };
}

/** A secret input: never prefilled; once stored, empty keeps it. */
export function secretInput(name, stored, kind = 'input') {
  const attrs = { name, autocomplete: 'new-password', spellcheck: 'false', placeholder: stored ? 'stored: leave empty to keep it' : '' };
  return kind === 'textarea' ? h('textarea', { ...attrs, rows: 3, class: 'code' }) : h('input', { ...attrs, type: 'password' });
}

/** What the API shows of a provider's settings (never its secrets), as one line. */
export function settingsLine(settings) {
  const parts = Object.entries(settings ?? {})
    .filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`);
  return parts.length ? h('code', { class: 'settings' }, parts.join(', ')) : '—';
}

/** The configured providers, first asked first, each removable. */
export function providerTable({ entries, names, path, rerender, empty, what }) {
  const sorted = [...entries].sort((a, b) => a.priority - b.priority || a.provider.localeCompare(b.provider));
  return table(
    [
      ['Order', (p) => String(p.priority)],
      ['Provider', (p) => names[p.provider] ?? p.provider],
      ['Settings', (p) => settingsLine(p.settings)],
      ['Status', (p) => (p.credentials_unreadable ? h('span', { class: 'error-text' }, 'credentials unreadable: set them again') : pill(p.enabled ? 'enabled' : 'disabled'))],
      ['Updated', (p) => formatTime(p.updated_at)],
      ['', (p) => actionButton('Remove', async () => { await api('DELETE', `${path}/${p.provider}`); await rerender(); }, { question: `Remove the ${names[p.provider] ?? p.provider} ${what}?`, kind: 'danger', ariaLabel: `Remove ${p.provider}` })],
    ],
    sorted,
    empty,
  );
}

/**
 * A test send through one configured provider: `targets(provider)` names the fields it needs (the
 * API's names); the provider's answer shows in the form's status line.
 */
export function testForm({ entries, names, path, targets, label }) {
  const provider = h('select', { name: 'provider' }, entries.map((e) => h('option', { value: e.provider }, names[e.provider] ?? e.provider)));
  const slot = h('div', { class: 'test-targets' });
  let controls = [];
  const paint = () => {
    const wanted = targets(provider.value);
    controls = wanted.map(([name, , placeholder]) => h('input', { name, placeholder, autocomplete: 'off', spellcheck: 'false' }));
    mount(slot, wanted.map(([, text], i) => field(text, controls[i])));
  };
  provider.addEventListener('change', paint);
  paint();
  return actionForm([field('Provider', provider), slot], label, async () => {
    const body = {};
    for (const c of controls) if (c.value.trim()) body[c.name] = c.value.trim();
    const result = await api('POST', `${path}/${provider.value}/test`, body);
    const name = names[provider.value] ?? provider.value;
    if (!result.ok) throw new Error(`Not sent through ${name}: ${result.error ?? 'the provider refused it'}`);
    return `Sent through ${name}${result.message_id ? ` (message id ${result.message_id})` : ''}.`;
  }, { inline: true });
}

/** "Set up X" or "Change X": one provider's form, folded. */
export function providerDetails(name, entry, form) {
  return h('details', { class: 'provider-form' }, h('summary', {}, entry ? `Change ${name}` : `Set up ${name}`), form);
}

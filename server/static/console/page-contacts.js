// Contacts: find one by your external id; see its fields, its preference matrix (and change it), its
// chat destinations (and add or remove them), and the notifications sent to it (from the activity log).
import { api, qs } from './api.js';
import { h, mount, field, formatTime, pill, table, notice } from './dom.js';
import { header, panel, served, CHANNELS, CHANNEL_NAMES } from './kit.js';
import { chatDestinationsPanel } from './contact-chat-destinations.js';

function preferenceMatrix(contact, matrix) {
  const types = [...new Set(matrix.map((p) => p.type))];
  const cell = (type, channel) => {
    const pref = matrix.find((p) => p.type === type && p.channel === channel);
    if (!pref) return '—';
    const input = h('input', { type: 'checkbox', checked: pref.enabled, 'aria-label': `${type} by ${CHANNEL_NAMES[channel]}` });
    input.addEventListener('change', async () => {
      try {
        await api('PUT', `/v1/contacts/${contact.id}/preferences`, { type, channel, enabled: input.checked });
      } catch (error) {
        input.checked = !input.checked;
        input.after(h('span', { class: 'error-text', role: 'alert' }, ` ${error.message}`));
      }
    });
    return h('label', { class: 'check' }, input, pref.source === 'contact' ? h('span', { class: 'hint' }, ' set by contact') : null);
  };
  return table([['Type', (t) => t], ...CHANNELS.map((c) => [CHANNEL_NAMES[c], (t) => cell(t, c)])], types, 'No live notification types.');
}

async function showContact(out, externalId, paths) {
  mount(out, h('p', { class: 'loading' }, 'Looking…'));
  let contact;
  try {
    contact = await api('GET', `/v1/contacts${qs({ external_id: externalId })}`);
  } catch (error) {
    return mount(out, notice(error.status === 404 ? 'info' : 'error', error.status === 404 ? `No contact has the external id “${externalId}”.` : error.message));
  }
  const withChat = served(paths, '/v1/contacts/{id}/chat-destinations');
  const [prefs, events, destinations] = await Promise.all([
    api('GET', `/v1/contacts/${contact.id}/preferences`),
    api('GET', `/v1/notifications${qs({ external_id: contact.external_id, limit: 20 })}`),
    withChat ? api('GET', `/v1/contacts/${contact.id}/chat-destinations`) : null,
  ]);
  mount(
    out,
    panel(contact.name || contact.external_id,
      h('dl', { class: 'facts' }, [
        ['External id', contact.external_id], ['Id', contact.id], ['Email', contact.email ?? '—'], ['Phone', contact.phone ?? '—'],
        ['Language', contact.language ?? '—'], ['Created', formatTime(contact.created_at)],
      ].map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
      Object.keys(contact.properties ?? {}).length ? h('details', {}, h('summary', {}, 'Properties'), h('pre', { class: 'json' }, JSON.stringify(contact.properties, null, 2))) : null),
    panel('Preferences', preferenceMatrix(contact, prefs.preferences)),
    withChat ? chatDestinationsPanel(contact, destinations) : null,
    panel('Inbox and recent notifications',
      table(
        [
          ['When', (e) => h('a', { href: `/console/activity?external_id=${encodeURIComponent(contact.external_id)}&event=${e.event_id}`, 'data-nav': true }, formatTime(e.created_at))],
          ['Type', (e) => e.type],
          ['Status', (e) => pill(e.status)],
          ['Inbox', (e) => { const d = e.deliveries.find((x) => x.channel === 'inbox'); return d ? pill(d.status) : '—'; }],
        ],
        events.items,
        'Nothing sent to this contact yet.',
      )),
  );
}

async function render({ root, navigate, paths }) {
  const query = new URLSearchParams(location.search);
  const input = h('input', { type: 'search', name: 'external_id', value: query.get('external_id') ?? '', required: true, autocomplete: 'off', placeholder: 'user_42' });
  const out = h('div');
  const form = h('form', { class: 'filters', role: 'search', method: 'post' }, field('External id', input, 'The id your own system gives the person.'), h('button', { type: 'submit', class: 'primary' }, 'Find'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (input.value.trim()) navigate(`/console/contacts${qs({ external_id: input.value.trim() })}`);
  });
  mount(root, header('Contacts', 'The people you notify, by the id your system gives them.'), form, out);
  if (query.get('external_id')) await showContact(out, query.get('external_id'), paths);
}

export default { id: 'contacts', label: 'Contacts', group: 'Audience', render };

// The activity log: every event, newest first, filtered by type, status or recipient; an event opens
// with its variables (secrets masked by the API) and each delivery's status, attempts and last error.
import { api } from './api.js';
import { h, mount, field, formatTime, pill, table, notice } from './dom.js';
import { header, panel, pagedList, CHANNEL_NAMES } from './kit.js';

const STATUSES = ['queued', 'processing', 'delivered', 'partially_delivered', 'failed', 'skipped', 'scheduled', 'canceled', 'digested'];

function eventDetail(event) {
  const steps = Array.isArray(event.steps) && event.steps.length
    ? panel('Steps', table([['#', (s) => String(s.index)], ['Kind', (s) => s.kind], ['Status', (s) => pill(s.status)], ['Runs at', (s) => formatTime(s.run_at)], ['Reason', (s) => s.reason ?? '—']], event.steps))
    : null;
  return h(
    'div',
    { class: 'event-detail' },
    h('dl', { class: 'facts' },
      h('dt', {}, 'Event'), h('dd', {}, h('code', {}, event.event_id)),
      h('dt', {}, 'Type'), h('dd', {}, event.type),
      h('dt', {}, 'Recipient'), h('dd', {}, event.external_id),
      h('dt', {}, 'Status'), h('dd', {}, pill(event.status)),
      h('dt', {}, 'Created'), h('dd', {}, formatTime(event.created_at)),
      h('dt', {}, 'Updated'), h('dd', {}, formatTime(event.updated_at)),
    ),
    panel(
      'Deliveries',
      table(
        [
          ['Channel', (d) => CHANNEL_NAMES[d.channel] ?? d.channel],
          ['Status', (d) => pill(d.status)],
          ['Reason', (d) => (d.reason ? d.reason.replace(/_/g, ' ') : '—')],
          ['Provider', (d) => d.provider ?? '—'],
          ['Attempts', (d) => (d.next_attempt_at ? `${d.attempts}, next ${formatTime(d.next_attempt_at)}` : String(d.attempts))],
          ['Last error', (d) => (d.last_error ? h('span', { class: 'error-text' }, d.last_error) : '—')],
          ['Updated', (d) => formatTime(d.updated_at)],
        ],
        event.deliveries,
        'No deliveries yet.',
      ),
    ),
    steps,
    panel('Variables', h('pre', { class: 'json' }, JSON.stringify(event.variables ?? {}, null, 2))),
  );
}

async function render({ root, navigate }) {
  const query = new URLSearchParams(location.search);
  const types = await api('GET', '/v1/notification-types').catch(() => []);
  const typeSelect = h('select', { name: 'type' }, h('option', { value: '' }, 'All types'), types.map((t) => h('option', { value: t.key, selected: query.get('type') === t.key }, t.name || t.key)));
  const statusSelect = h('select', { name: 'status' }, h('option', { value: '' }, 'Any status'), STATUSES.map((s) => h('option', { value: s, selected: query.get('status') === s }, s.replace(/_/g, ' '))));
  const recipient = h('input', { type: 'search', name: 'external_id', value: query.get('external_id') ?? '', placeholder: 'external id', autocomplete: 'off' });
  const filters = h('form', { class: 'filters', role: 'search', method: 'post' },
    field('Type', typeSelect), field('Status', statusSelect), field('Recipient', recipient),
    h('button', { type: 'submit', class: 'primary' }, 'Filter'));
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of [['type', typeSelect.value], ['status', statusSelect.value], ['external_id', recipient.value.trim()]]) if (v) next.set(k, v);
    navigate(`/console/activity${next.size ? `?${next}` : ''}`);
  });
  const detail = h('div', { id: 'event-detail' });
  const list = h('div', { class: 'event-list' });
  mount(root, header('Activity', 'Every notification event, newest first. Open one to see each delivery, its attempts and errors.'), filters, h('div', { class: 'split' }, list, detail));
  // The activity log's items are whole events (deliveries, steps, errors): the one-event route takes
  // a service key only, as the interface says, so the console shows what the log gave it.
  const loaded = new Map();
  const open = (eventId) => {
    const event = loaded.get(eventId);
    if (!event) return mount(detail, notice('error', 'This event is not in the list: filter by its type or recipient to find it.'));
    mount(detail, panel(`Event ${event.type}`, eventDetail(event)));
    for (const row of list.querySelectorAll('tr[aria-selected]')) row.setAttribute('aria-selected', String(row.dataset.id === eventId));
  };
  const tbody = h('tbody');
  list.append(
    h('div', { class: 'table-wrap' },
      h('table', { class: 'selectable' },
        h('thead', {}, h('tr', {}, ['When', 'Type', 'Recipient', 'Status', 'Channels'].map((c) => h('th', { scope: 'col' }, c)))),
        tbody)),
  );
  await pagedList(list, '/v1/notifications', { type: typeSelect.value, status: statusSelect.value, external_id: recipient.value.trim(), limit: 50 }, (items) => {
    if (items.length === 0 && !tbody.children.length) tbody.append(h('tr', {}, h('td', { colspan: 5, class: 'empty' }, 'No events match.')));
    for (const e of items) {
      loaded.set(e.event_id, e);
      const openButton = h('button', { type: 'button', class: 'link', 'aria-label': `Open event ${e.type} for ${e.external_id}`, onclick: () => open(e.event_id) }, formatTime(e.created_at, 'short'));
      tbody.append(
        h('tr', { dataset: { id: e.event_id }, 'aria-selected': 'false' },
          h('td', {}, openButton),
          h('td', {}, e.type),
          h('td', {}, e.external_id),
          h('td', {}, pill(e.status)),
          h('td', { class: 'channels' }, e.deliveries.map((d) => h('span', { class: `chip chip-${d.status}`, title: `${d.channel}: ${d.status}` }, CHANNEL_NAMES[d.channel] ?? d.channel)))),
      );
    }
  });
  if (query.get('event')) open(query.get('event'));
}

export default { id: 'activity', label: 'Activity', group: 'Monitor', render };

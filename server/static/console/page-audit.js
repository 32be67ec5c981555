// The audit log: who changed what, when and from where, with the change itself (secrets masked).
import { h, mount, field, formatTime, table } from './dom.js';
import { header, pagedList } from './kit.js';

async function render({ root, navigate }) {
  const query = new URLSearchParams(location.search);
  const actor = h('input', { type: 'search', name: 'actor', value: query.get('actor') ?? '', placeholder: 'email or id' });
  const action = h('input', { type: 'search', name: 'action', value: query.get('action') ?? '', placeholder: 'brand.* or api_key.create' });
  const form = h('form', { class: 'filters', role: 'search', method: 'post' }, field('Actor', actor), field('Action', action), h('button', { type: 'submit', class: 'primary' }, 'Filter'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    if (actor.value.trim()) next.set('actor', actor.value.trim());
    if (action.value.trim()) next.set('action', action.value.trim());
    navigate(`/console/audit${next.size ? `?${next}` : ''}`);
  });
  const list = h('div');
  mount(root, header('Audit log', 'Every change made through the API, the console or the CLI.'), form, list);
  const rows = h('div');
  list.append(rows);
  const all = [];
  await pagedList(list, '/v1/audit-log', { actor: actor.value.trim(), action: action.value.trim(), limit: 50 }, (items) => {
    all.push(...items);
    mount(rows, table(
      [
        ['When', (e) => formatTime(e.at, 'short')],
        ['Who', (e) => h('span', {}, h('span', { class: 'pill' }, e.actor.kind.replace('_', ' ')), ' ', actorLabel(e.actor))],
        ['Action', (e) => h('code', {}, e.action)],
        ['Target', (e) => h('span', { title: e.target.id ?? '' }, e.target.kind, e.target.id ? h('code', { class: 'id' }, ` ${e.target.id.length > 24 ? `${e.target.id.slice(0, 8)}…` : e.target.id}`) : null)],
        ['From', (e) => e.ip ?? '—'],
        ['Change', (e) => (e.changes ? h('details', {}, h('summary', {}, 'show'), h('pre', { class: 'json' }, JSON.stringify(e.changes, null, 2))) : '—')],
      ],
      all,
      'No entries match.',
    ));
  });
}

// A service key by its name, its id kept beside it (shortened; whole on hover) for the Actor filter.
function actorLabel(actor) {
  if (actor.email) return actor.email;
  if (actor.name) return h('span', { title: actor.id }, actor.name, h('code', { class: 'id' }, ` ${actor.id.slice(0, 8)}…`));
  return actor.id ?? '—';
}

export default { id: 'audit', label: 'Audit log', group: 'Settings', render };

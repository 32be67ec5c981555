// Sections of capabilities an install may not have yet (webhooks, topics, broadcasts, suppressions):
// each appears in the navigation once its API path exists (see sections.js) and lists what the API
// returns. A richer page replaces one of these by a module of its own.
import { api } from './api.js';
import { h, mount, formatTime, pill, table } from './dom.js';
import { header, panel } from './kit.js';

function listSection({ id, label, group, path, lead, columns }) {
  return {
    id,
    label,
    group,
    requires: path,
    async render({ root }) {
      const body = await api('GET', path);
      const items = Array.isArray(body) ? body : (body.items ?? []);
      mount(root, header(label, lead), panel(null, table(columns, items, `No ${label.toLowerCase()} yet.`)));
    },
  };
}

const when = (key) => (row) => formatTime(row[key]);

export const webhooks = listSection({
  id: 'webhooks', label: 'Webhooks', group: 'Settings', path: '/v1/webhooks', lead: 'Endpoints Herald tells about deliveries, reads and bounces.',
  columns: [['URL', (w) => h('code', {}, w.url)], ['Events', (w) => (w.event_types ?? []).join(', ')], ['Enabled', (w) => (w.enabled === false ? pill('disabled') : pill('enabled'))], ['Created', when('created_at')]],
});
export const topics = listSection({
  id: 'topics', label: 'Topics', group: 'Audience', path: '/v1/topics', lead: 'Named audiences contacts subscribe to.',
  columns: [['Key', (t) => h('code', {}, t.key)], ['Name', (t) => t.name ?? '—'], ['Subscribers', (t) => String(t.subscriber_count ?? '—')]],
});
export const broadcasts = listSection({
  id: 'broadcasts', label: 'Broadcasts', group: 'Audience', path: '/v1/broadcasts', lead: 'One notification to a whole audience.',
  columns: [['Type', (b) => b.type], ['Status', (b) => pill(b.status)], ['Targeted', (b) => String(b.targeted ?? '—')], ['Created', when('created_at')]],
});
export const suppressions = listSection({
  id: 'suppressions', label: 'Suppressions', group: 'Audience', path: '/v1/suppressions', lead: 'Addresses Herald no longer emails (bounces, complaints).',
  columns: [['Email', (s) => s.email], ['Reason', (s) => s.reason ?? '—'], ['Since', when('created_at')]],
});

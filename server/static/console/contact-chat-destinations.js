// A contact's chat destinations on the Contacts page: where its chat messages go (a Slack or Teams
// channel's webhook, a Slack channel id for the tenant's bot, a Telegram chat ...). A webhook URL is a
// credential: typed once, then shown only as the API's hint.
import { api } from './api.js';
import { h, mount, field, formatTime, table } from './dom.js';
import { panel, actionForm, actionButton } from './kit.js';

export const CHAT_PROVIDER_NAMES = { slack: 'Slack', teams: 'Microsoft Teams', discord: 'Discord', telegram: 'Telegram', mattermost: 'Mattermost', google_chat: 'Google Chat' };

/** The fields each provider takes: a webhook URL, and for the bot providers a channel or chat id. */
const FIELDS = {
  slack: ['webhook_url', 'channel'],
  teams: ['webhook_url'],
  discord: ['webhook_url'],
  telegram: ['chat_id'],
  mattermost: ['webhook_url'],
  google_chat: ['webhook_url'],
};

const listOf = (body) => (Array.isArray(body) ? body : (body?.items ?? []));

function where(d) {
  if (d.webhook_url_hint) return h('code', { class: 'hint-url' }, d.webhook_url_hint);
  if (d.channel) return ['channel ', h('code', {}, d.channel)];
  if (d.chat_id) return ['chat ', h('code', {}, d.chat_id)];
  return '—';
}

function addForm(contact, reload) {
  const provider = h('select', { name: 'provider' }, Object.entries(CHAT_PROVIDER_NAMES).map(([id, name]) => h('option', { value: id }, name)));
  const controls = {
    webhook_url: h('input', { name: 'webhook_url', type: 'password', autocomplete: 'off', spellcheck: 'false', placeholder: 'https://hooks.slack.com/services/…' }),
    channel: h('input', { name: 'channel', autocomplete: 'off', spellcheck: 'false', placeholder: 'C0123456789' }),
    chat_id: h('input', { name: 'chat_id', autocomplete: 'off', spellcheck: 'false', placeholder: '-1001234567890' }),
  };
  const label = h('input', { name: 'label', maxlength: 200, placeholder: '#orders' });
  const wrappers = {
    webhook_url: field('Webhook URL', controls.webhook_url, 'Write-only: a credential, shown afterwards only as a hint.'),
    channel: field('Channel or user id', controls.channel, "Instead of a webhook: posted with the tenant's Slack bot."),
    chat_id: field('Chat id', controls.chat_id, "Sent with the tenant's Telegram bot."),
  };
  const paint = () => {
    for (const [name, wrapper] of Object.entries(wrappers)) wrapper.hidden = !FIELDS[provider.value].includes(name);
  };
  provider.addEventListener('change', paint);
  paint();
  return actionForm([h('div', { class: 'grid' }, field('Provider', provider), wrappers.webhook_url, wrappers.channel, wrappers.chat_id, field('Label', label, 'Optional: how you know it.'))], 'Add destination', async () => {
    const body = { provider: provider.value };
    for (const name of FIELDS[provider.value]) if (controls[name].value.trim()) body[name] = controls[name].value.trim();
    if (label.value.trim()) body.label = label.value.trim();
    await api('POST', `/v1/contacts/${contact.id}/chat-destinations`, body);
    await reload();
  });
}

/** The panel, drawn again in place after each change. */
export function chatDestinationsPanel(contact, destinations) {
  const el = h('div');
  const reload = async () => {
    paint(listOf(await api('GET', `/v1/contacts/${contact.id}/chat-destinations`)));
  };
  const paint = (list) => mount(el, panel('Chat destinations',
    table(
      [
        ['Provider', (d) => CHAT_PROVIDER_NAMES[d.provider] ?? d.provider],
        ['Label', (d) => d.label ?? '—'],
        ['Where', where],
        ['Added', (d) => formatTime(d.created_at)],
        ['', (d) => actionButton('Remove', async () => { await api('DELETE', `/v1/contacts/${contact.id}/chat-destinations/${d.id}`); await reload(); }, { question: `Remove the ${CHAT_PROVIDER_NAMES[d.provider] ?? d.provider} destination${d.label ? ` “${d.label}”` : ''}?`, kind: 'danger', ariaLabel: `Remove ${d.label ?? d.provider}` })],
      ],
      list,
      'No chat destination: chat messages to this contact are skipped.',
    ),
    h('details', { open: list.length === 0 }, h('summary', {}, 'Add a chat destination'), addForm(contact, reload))));
  paint(listOf(destinations));
  return el;
}

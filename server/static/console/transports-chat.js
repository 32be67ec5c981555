// The chat bots of the Transports page: a Slack bot (channel and user ids) and a Telegram bot (chat
// ids). Webhook destinations need no bot: they are a contact's own (the Contacts page). Tokens are
// write-only.
import { api } from './api.js';
import { h, field } from './dom.js';
import { panel, actionForm } from './kit.js';
import { orderControls, secretInput, providerTable, testForm, providerDetails } from './transport-parts.js';

export const BOT_NAMES = { slack: 'Slack bot', telegram: 'Telegram bot' };
const TOKEN_HINTS = { slack: 'xoxb-…: write-only, never shown again.', telegram: '123456:ABC…: write-only, never shown again.' };
const TEST_TARGETS = { slack: [['channel', 'Channel or user id', 'C0123456789']], telegram: [['chat_id', 'Chat id', '-1001234567890']] };

function botForm(provider, entry, rerender) {
  const token = secretInput('bot_token', Boolean(entry));
  const order = orderControls(entry);
  return actionForm([field('Bot token', token, TOKEN_HINTS[provider]), order.fields], `Save ${BOT_NAMES[provider]}`, async () => {
    const body = order.body();
    if (token.value.trim()) body.bot_token = token.value.trim();
    await api('PUT', `/v1/chat-transport/${provider}`, body);
    await rerender();
  });
}

export function chatPanel(entries, rerender) {
  const byProvider = Object.fromEntries(entries.map((e) => [e.provider, e]));
  return panel(
    'Chat bots',
    h('p', { class: 'hint' }, 'A bot posts to Slack channel or user ids and Telegram chats. Webhook destinations (Slack, Teams, Discord, Mattermost, Google Chat) need no bot: add them to a contact on the Contacts page.'),
    providerTable({ entries, names: BOT_NAMES, path: '/v1/chat-transport', rerender, empty: 'No chat bot yet: Slack channel ids and Telegram chats are skipped (no transport).', what: 'chat bot' }),
    entries.length ? h('div', { class: 'row' }, testForm({ entries, names: BOT_NAMES, path: '/v1/chat-transport', targets: (p) => TEST_TARGETS[p] ?? [], label: 'Post a test message' })) : null,
    Object.keys(BOT_NAMES).map((provider) => providerDetails(BOT_NAMES[provider], byProvider[provider], botForm(provider, byProvider[provider], rerender))),
  );
}

// Service keys: issue (the key is shown once, with a copy button), list, revoke.
import { api } from './api.js';
import { h, mount, field, formatTime, table, copyText } from './dom.js';
import { header, panel, actionForm, actionButton } from './kit.js';

async function render(ctx) {
  const { root } = ctx;
  const keys = await api('GET', '/v1/api-keys');
  const issued = h('div', { class: 'issued' });
  const nameInput = h('input', { name: 'name', required: true, maxlength: 100, placeholder: 'billing backend' });
  mount(
    root,
    header('Service keys', 'Keys your backends use to call Herald (sk_…). A key is shown once, when it is issued.'),
    issued,
    panel(
      'Issue a key',
      actionForm([field('Name', nameInput, 'Which backend or script holds it.')], 'Issue key', async () => {
        const key = await api('POST', '/v1/api-keys', { name: nameInput.value.trim() });
        await render(ctx);
        const value = h('code', { class: 'secret', id: 'issued-key' }, key.key);
        const copy = h('button', { type: 'button', onclick: () => copyText(copy, key.key) }, 'Copy');
        mount(
          root.querySelector('.issued'),
          h('div', { class: 'notice notice-success', role: 'status' },
            h('p', {}, h('strong', {}, `Key “${key.name}” issued.`), ' Copy it now: it will not be shown again.'),
            h('div', { class: 'secret-row' }, value, copy)),
        );
      }, { inline: true }),
    ),
    panel(
      'Live keys',
      table(
        [
          ['Name', (k) => k.name],
          ['Key', (k) => h('code', {}, `${k.prefix}…`)],
          ['Created', (k) => formatTime(k.created_at)],
          ['Last used', (k) => (k.last_used_at ? formatTime(k.last_used_at) : 'never')],
          ['', (k) => actionButton('Revoke', async () => { await api('DELETE', `/v1/api-keys/${k.id}`); await render(ctx); }, { question: `Revoke “${k.name}”? Anything using it stops working at once.`, kind: 'danger', ariaLabel: `Revoke ${k.name}` })],
        ],
        keys,
        'No live keys.',
      ),
    ),
  );
}

export default { id: 'keys', label: 'Service keys', group: 'Settings', render };

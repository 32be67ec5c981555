// The http endpoint of the Transports page: the tenant's own URL, one signed POST per recipient. Its
// signing secret is answered once, when the endpoint is created or the secret rotated: shown then with
// a copy button, never again. Header values are write-only.
import { api } from './api.js';
import { h, mount, field, formatTime, notice } from './dom.js';
import { panel, actionForm, actionButton, parseJsonObject, shownOnce } from './kit.js';

function facts(current) {
  return h('dl', { class: 'facts' }, [
    ['URL', h('code', {}, current.url)],
    ['Headers', current.header_names?.length ? current.header_names.join(', ') : 'none'],
    ['Secret variables', current.include_secret_variables ? 'sent in clear' : 'masked'],
    ['Updated', formatTime(current.updated_at)],
  ].map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

/** `secretSlot` keeps its content across the page's re-render: the secret shows there after a save. */
export function httpPanel(current, { rerender, secretSlot, canRotate }) {
  const url = h('input', { name: 'url', type: 'url', value: current?.url ?? '', placeholder: 'https://hooks.example.com/herald', autocomplete: 'off', spellcheck: 'false' });
  const headers = h('textarea', { name: 'headers', rows: 3, class: 'code', spellcheck: 'false', autocomplete: 'off', placeholder: current?.header_names?.length ? 'stored: leave empty to keep them' : '{"Authorization": "Bearer …"}' });
  const secretVars = h('input', { type: 'checkbox', name: 'include_secret_variables', checked: Boolean(current?.include_secret_variables) });
  return panel(
    'HTTP endpoint',
    h('p', { class: 'hint' }, 'Your own endpoint: one POST per recipient, signed as webhooks are (webhook-id, webhook-timestamp, webhook-signature), with the type\'s HTTP template as body.'),
    current?.credentials_unreadable ? notice('error', 'The stored headers or signing secret cannot be read any more (their encryption key was retired): save the endpoint again.') : null,
    current ? facts(current) : h('p', { class: 'empty' }, 'Not set: HTTP deliveries are skipped (no transport).'),
    secretSlot,
    actionForm(
      [
        field('URL', url),
        field('Headers (JSON)', headers, 'Write-only: values are never shown. Empty keeps the stored ones; {} removes them.'),
        h('div', { class: 'field' }, h('label', { class: 'check' }, secretVars, ' Send secret variables in clear (masked otherwise)')),
      ],
      current ? 'Save endpoint' : 'Create endpoint',
      async () => {
        const body = { url: url.value.trim(), include_secret_variables: secretVars.checked };
        if (headers.value.trim()) body.headers = parseJsonObject(headers.value, 'The headers');
        const saved = await api('PUT', '/v1/http-transport', body);
        if (saved.secret) mount(secretSlot, shownOnce('Signing secret.', saved.secret, 'http-secret'));
        else mount(secretSlot);
        await rerender();
      },
    ),
    current
      ? h('div', { class: 'row' },
        actionForm([], 'Send a test request', async () => {
          const result = await api('POST', '/v1/http-transport/test');
          const status = result.status ? ` (HTTP ${result.status})` : '';
          if (!result.ok) throw new Error(`Not delivered${status}: ${result.error ?? 'the endpoint refused it'}`);
          return `Delivered${status}${result.message_id ? `, id ${result.message_id}` : ''}.`;
        }, { inline: true }),
        canRotate
          ? actionButton('Rotate signing secret', async () => {
            const rotated = await api('POST', '/v1/http-transport/rotate-secret');
            mount(secretSlot, shownOnce('New signing secret: the old one no longer signs.', rotated.secret, 'http-secret'));
            await rerender();
          }, { question: 'Make a new signing secret? Your endpoint must check the new one from now on.' })
          : null,
        actionButton('Remove endpoint', async () => { await api('DELETE', '/v1/http-transport'); mount(secretSlot); await rerender(); }, { question: 'Remove the HTTP endpoint?', kind: 'danger' }))
      : null,
  );
}

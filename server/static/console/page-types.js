// Notification types: channels on by default, the opt-out policy, the variables a trigger must carry,
// delete and restore; and a form to create one.
import { api } from './api.js';
import { h, mount, field, notice } from './dom.js';
import { header, panel, actionForm, actionButton, CHANNELS, CHANNEL_NAMES } from './kit.js';

function switchControl(label, checked, onChange) {
  const input = h('input', { type: 'checkbox', role: 'switch', checked });
  input.addEventListener('change', async () => {
    input.disabled = true;
    try {
      await onChange(input.checked);
    } catch (error) {
      input.checked = !input.checked;
      input.parentElement.after(notice('error', error.message));
    } finally {
      input.disabled = false;
    }
  });
  return h('label', { class: 'switch' }, input, h('span', {}, label));
}

function variablesEditor(type) {
  const rows = h('div', { class: 'var-rows' });
  const addRow = (v = { name: '', required: true, description: '' }) => {
    const row = h('div', { class: 'var-row' },
      h('input', { name: 'var-name', value: v.name, 'aria-label': 'Variable name', placeholder: 'order_id', maxlength: 64 }),
      h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'var-required', checked: v.required }), ' required'),
      h('input', { name: 'var-description', value: v.description ?? '', 'aria-label': 'Description', placeholder: 'What it holds', maxlength: 500 }),
      h('button', { type: 'button', class: 'icon', 'aria-label': `Remove variable ${v.name}`, onclick: () => row.remove() }, '×'));
    rows.append(row);
  };
  for (const v of type.variables) addRow(v);
  return actionForm(
    [rows, h('button', { type: 'button', onclick: () => addRow() }, 'Add variable')],
    'Save variables',
    async () => {
      const variables = [...rows.children].map((row) => ({
        name: row.querySelector('[name=var-name]').value.trim(),
        required: row.querySelector('[name=var-required]').checked,
        description: row.querySelector('[name=var-description]').value.trim(),
      })).filter((v) => v.name);
      await api('PUT', `/v1/notification-types/${type.key}/variables`, { variables });
      return 'Variables saved.';
    },
  );
}

/** The type's workflow as JSON steps (where the install has workflows: the type carries a workflow field). */
function workflowEditor(type, ctx) {
  const base = `/v1/notification-types/${type.key}/workflow`;
  const steps = h('textarea', { name: 'steps', rows: 8, class: 'code', spellcheck: 'false' });
  steps.value = JSON.stringify(type.workflow?.steps ?? [{ kind: 'channel', channel: 'inbox' }, { kind: 'delay', seconds: 3600 }, { kind: 'channel', channel: 'email', if: 'inbox.read == false' }], null, 2);
  return h('details', {}, h('summary', {}, type.workflow ? `Workflow (${type.workflow.steps.length} steps)` : 'Workflow (default: every channel at once)'),
    actionForm([field('Steps (JSON)', steps, 'channel, delay, digest and throttle steps; conditions are checked on save.')], 'Save workflow', async () => {
      let parsed;
      try {
        parsed = JSON.parse(steps.value);
      } catch (error) {
        throw new Error('The steps must be a JSON list.', { cause: error });
      }
      await api('PUT', base, { steps: parsed });
      await render(ctx);
    }),
    type.workflow ? actionButton('Back to the default', async () => { await api('DELETE', base); await render(ctx); }, { question: `Remove the workflow of ${type.key}?` }) : null);
}

function typeCard(type, ctx) {
  const base = `/v1/notification-types/${type.key}`;
  return h(
    'article',
    { class: `card${type.deleted ? ' deleted' : ''}`, 'aria-labelledby': `type-${type.key}` },
    h('header', { class: 'card-header' },
      h('div', {}, h('h2', { id: `type-${type.key}` }, type.name || type.key), h('code', {}, type.key), type.description ? h('p', { class: 'hint' }, type.description) : null),
      type.deleted
        ? actionButton('Restore', async () => { await api('POST', `${base}/restore`); await render(ctx); })
        : actionButton('Delete', async () => { await api('DELETE', base); await render(ctx); }, { question: `Delete the type “${type.key}”? Triggers of it are refused until it is restored.`, kind: 'danger', ariaLabel: `Delete ${type.key}` })),
    type.deleted ? h('p', { class: 'hint' }, 'Deleted: restore it to send it again.') : [
      h('fieldset', { class: 'channels' }, h('legend', {}, 'Channels on by default'),
        CHANNELS.map((c) => switchControl(CHANNEL_NAMES[c], Boolean(type.channel_defaults[c]), (on) => api('PATCH', `${base}/channel-defaults`, { channel_defaults: { [c]: on } })))),
      h('fieldset', {}, h('legend', {}, 'Opt-out policy'),
        switchControl('Contacts may opt out of this type', type.opt_out, (on) => api('PATCH', `${base}/opt-out-policy`, { opt_out: on }))),
      'workflow' in type ? workflowEditor(type, ctx) : null,
      h('details', {}, h('summary', {}, `Variables (${type.variables.length})`), variablesEditor(type)),
    ],
  );
}

async function render(ctx) {
  const { root } = ctx;
  const types = await api('GET', '/v1/notification-types?include_deleted=true');
  const key = h('input', { name: 'key', required: true, pattern: '[a-z0-9][a-z0-9_.-]{0,63}', placeholder: 'order_shipped' });
  const name = h('input', { name: 'name', required: true, maxlength: 200, placeholder: 'Order shipped' });
  mount(
    root,
    header('Notification types', 'The kinds of message you send, their channels and what a trigger must carry.'),
    panel('New type', actionForm([field('Key', key, 'Lowercase letters, digits, . _ -'), field('Name', name)], 'Create type', async () => {
      await api('POST', '/v1/notification-types', { key: key.value.trim(), name: name.value.trim() });
      await render(ctx);
    }, { inline: true })),
    types.length ? h('div', { class: 'cards' }, types.map((t) => typeCard(t, ctx))) : h('p', { class: 'empty' }, 'No notification types yet.'),
  );
}

export default { id: 'types', label: 'Notification types', group: 'Messages', render };

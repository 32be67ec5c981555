// Templates of every channel: pick one, edit it, save it, and see the email as the render route makes
// it (with sample variables) in a sandboxed frame; inbox templates show as plain text; sms, chat and
// http templates as their render routes make them (template-text-editors.js). Kinds whose routes this
// install does not serve are left out.
import { api } from './api.js';
import { h, mount, field, formatTime, notice } from './dom.js';
import { header, panel, actionForm, debounce, parseJsonObject, served } from './kit.js';
import { sampleVariables, smsEditor, chatEditor, httpEditor, STARTERS } from './template-text-editors.js';

/** The sandboxed preview: an opaque-origin frame whose own policy lets styles apply but runs no script of the email. */
function previewFrame() {
  const frame = h('iframe', { class: 'preview', title: 'Email preview', sandbox: 'allow-scripts', src: '/console/frame/preview', referrerpolicy: 'no-referrer' });
  let ready = false;
  let pending = null;
  window.addEventListener('message', (event) => {
    if (event.source !== frame.contentWindow || !event.data?.previewReady) return;
    ready = true;
    if (pending !== null) frame.contentWindow.postMessage({ html: pending }, '*');
  });
  return {
    frame,
    show(html) {
      pending = html;
      if (ready) frame.contentWindow.postMessage({ html }, '*');
    },
  };
}

function emailEditor(template, types) {
  const type = types.find((t) => t.key === template.notification_type_key);
  const subject = h('input', { name: 'subject', value: template.subject, maxlength: 998 });
  const content = h('textarea', { name: 'content', rows: 14, spellcheck: 'false', class: 'code' });
  content.value = template.content;
  const variables = h('textarea', { name: 'variables', rows: 5, spellcheck: 'false', class: 'code' });
  variables.value = sampleVariables(type);
  const preview = previewFrame();
  const previewSubject = h('p', { class: 'preview-subject' });
  const previewStatus = h('div', { 'aria-live': 'polite' });
  const text = h('pre', { class: 'preview-text' });
  const refresh = async () => {
    try {
      const rendered = await api('POST', '/v1/email-templates/render', {
        notification_type_key: template.notification_type_key,
        brand_key: template.brand_key,
        language: template.language,
        variables: parseJsonObject(variables.value, 'Sample variables'),
      });
      mount(previewStatus);
      mount(previewSubject, h('span', { class: 'label' }, 'Subject: '), rendered.subject);
      text.textContent = rendered.text;
      preview.show(rendered.html);
    } catch (error) {
      mount(previewStatus, notice('error', error.message));
    }
  };
  variables.addEventListener('input', debounce(refresh, 400));
  const editor = h('div', { class: 'editor' },
    actionForm([field('Subject', subject), field('Content (HTML with {{ placeholders }})', content)], 'Save and preview', async () => {
      const saved = await api('PUT', `/v1/email-templates/${template.id}`, { subject: subject.value, content: content.value });
      Object.assign(template, saved);
      await refresh();
      return `Saved ${formatTime(saved.updated_at)}.`;
    }),
    field('Sample variables (JSON)', variables, 'Used for the preview only.'));
  const view = h('div', { class: 'preview-pane' }, h('h3', {}, 'Preview'), previewStatus, previewSubject, preview.frame, h('details', {}, h('summary', {}, 'Text part'), text));
  refresh();
  return h('div', { class: 'template-editor' }, editor, view);
}

function inboxEditor(template) {
  const title = h('input', { name: 'title', value: template.title, maxlength: 500 });
  const content = h('textarea', { name: 'content', rows: 8, class: 'code' });
  content.value = template.content;
  const actionUrl = h('input', { name: 'action_url', value: template.action_url ?? '', placeholder: 'https://…/{{ order_id }}' });
  const card = h('div', { class: 'inbox-preview' }, h('strong', {}), h('p', {}), h('span', { class: 'hint' }));
  const paint = () => {
    card.children[0].textContent = title.value;
    card.children[1].textContent = content.value;
    card.children[2].textContent = actionUrl.value;
  };
  for (const input of [title, content, actionUrl]) input.addEventListener('input', paint);
  paint();
  return h('div', { class: 'template-editor' },
    actionForm([field('Title', title), field('Content', content), field('Action URL', actionUrl)], 'Save', async () => {
      await api('PUT', `/v1/inbox-templates/${template.id}`, { title: title.value, content: content.value, action_url: actionUrl.value.trim() || null });
      return 'Saved.';
    }),
    h('div', { class: 'preview-pane' }, h('h3', {}, 'Inbox item (placeholders unfilled)'), card));
}

/** The template kinds, in the list's order: the API path, the name, the editor, and what a new one starts with. */
const KINDS = [
  { id: 'email', name: 'Email', editor: (t, types) => emailEditor(t, types), starter: { subject: 'Hello {{ contact.name | default: "there" }}', content: '<p>Hello!</p>' } },
  { id: 'inbox', name: 'Inbox', editor: (t) => inboxEditor(t), starter: { title: 'Hello', content: 'Something happened.' } },
  { id: 'sms', name: 'SMS', editor: smsEditor, starter: STARTERS.sms, optional: true },
  { id: 'chat', name: 'Chat', editor: chatEditor, starter: STARTERS.chat, optional: true },
  { id: 'http', name: 'HTTP', editor: httpEditor, starter: STARTERS.http, optional: true },
];

function newTemplateForm(kinds, types, brands, ctx) {
  const kind = h('select', { name: 'kind' }, kinds.map((k) => h('option', { value: k.id }, k.name)));
  const type = h('select', { name: 'notification_type_key', required: true }, types.filter((t) => !t.deleted).map((t) => h('option', { value: t.key }, t.name || t.key)));
  const brand = h('select', { name: 'brand_key' }, brands.map((b) => h('option', { value: b.key, selected: b.is_default }, b.key)));
  const language = h('input', { name: 'language', value: 'en', maxlength: 35 });
  return actionForm([field('Channel', kind), field('Type', type), field('Brand', brand), field('Language', language)], 'Create template', async () => {
    const chosen = kinds.find((k) => k.id === kind.value);
    const slot = { notification_type_key: type.value, brand_key: brand.value, language: language.value.trim() };
    const created = await api('POST', `/v1/${chosen.id}-templates`, { ...slot, ...chosen.starter });
    ctx.navigate(`/console/templates?${chosen.id}=${created.id}`);
  }, { inline: true });
}

const listOf = (body) => (Array.isArray(body) ? body : (body?.items ?? []));

async function render(ctx) {
  const { root, paths } = ctx;
  const query = new URLSearchParams(location.search);
  const kinds = KINDS.filter((k) => !k.optional || served(paths, `/v1/${k.id}-templates`));
  const [types, brands, ...lists] = await Promise.all([
    api('GET', '/v1/notification-types?include_deleted=true'),
    api('GET', '/v1/brandings'),
    ...kinds.map((k) => api('GET', `/v1/${k.id}-templates`)),
  ]);
  const templates = new Map(kinds.map((k, i) => [k.id, listOf(lists[i])]));
  const selectedKind = kinds.find((k) => query.get(k.id) && templates.get(k.id).some((t) => t.id === query.get(k.id)));
  const selected = selectedKind ? templates.get(selectedKind.id).find((t) => t.id === query.get(selectedKind.id)) : null;
  const item = (kind, t) =>
    h('li', {}, h('a', { href: `/console/templates?${kind}=${t.id}`, 'data-nav': true, 'aria-current': t === selected ? 'true' : undefined },
      h('span', { class: 'tpl-type' }, t.notification_type_key), h('span', { class: 'tpl-slot' }, `${t.brand_key} · ${t.language}`)));
  mount(
    root,
    header('Templates', 'What each type says, per channel, brand and language.'),
    h('div', { class: 'templates' },
      h('nav', { class: 'template-list', 'aria-label': 'Templates' },
        kinds.map((k) => [
          h('h2', {}, k.name),
          templates.get(k.id).length ? h('ul', {}, templates.get(k.id).map((t) => item(k.id, t))) : h('p', { class: 'empty' }, 'None yet.'),
        ])),
      h('div', { class: 'template-main' },
        selected ? panel(`${selectedKind.name}: ${selected.notification_type_key}`, selectedKind.editor(selected, types))
          : h('p', { class: 'empty' }, 'Pick a template to edit it, or create one.'),
        panel('New template', newTemplateForm(kinds, types, brands, ctx)))),
  );
}

export default { id: 'templates', label: 'Templates', group: 'Messages', render };

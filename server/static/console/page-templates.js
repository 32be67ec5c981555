// Email and inbox templates: pick one, edit it, save it, and see the email as the render route makes
// it (with sample variables) in a sandboxed frame; inbox templates show as plain text.
import { api } from './api.js';
import { h, mount, field, formatTime, notice } from './dom.js';
import { header, panel, actionForm, debounce, parseJsonObject } from './kit.js';

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

function sampleVariables(type) {
  const sample = {};
  for (const v of type?.variables ?? []) sample[v.name] = `Sample ${v.name}`;
  return JSON.stringify(sample, null, 2);
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

function newTemplateForm(types, brands, ctx) {
  const kind = h('select', { name: 'kind' }, h('option', { value: 'email' }, 'Email'), h('option', { value: 'inbox' }, 'Inbox'));
  const type = h('select', { name: 'type', required: true }, types.filter((t) => !t.deleted).map((t) => h('option', { value: t.key }, t.name || t.key)));
  const brand = h('select', { name: 'brand' }, brands.map((b) => h('option', { value: b.key, selected: b.is_default }, b.key)));
  const language = h('input', { name: 'language', value: 'en', maxlength: 35 });
  return actionForm([field('Channel', kind), field('Type', type), field('Brand', brand), field('Language', language)], 'Create template', async () => {
    const slot = { notification_type_key: type.value, brand_key: brand.value, language: language.value.trim() };
    const created = kind.value === 'email'
      ? await api('POST', '/v1/email-templates', { ...slot, subject: 'Hello {{ contact.name | default: "there" }}', content: '<p>Hello!</p>' })
      : await api('POST', '/v1/inbox-templates', { ...slot, title: 'Hello', content: 'Something happened.' });
    ctx.navigate(`/console/templates?${kind.value}=${created.id}`);
  }, { inline: true });
}

async function render(ctx) {
  const { root } = ctx;
  const query = new URLSearchParams(location.search);
  const [email, inbox, types, brands] = await Promise.all([
    api('GET', '/v1/email-templates'),
    api('GET', '/v1/inbox-templates'),
    api('GET', '/v1/notification-types?include_deleted=true'),
    api('GET', '/v1/brandings'),
  ]);
  const selectedEmail = email.find((t) => t.id === query.get('email'));
  const selectedInbox = inbox.find((t) => t.id === query.get('inbox'));
  const item = (kind, t, selected) =>
    h('li', {}, h('a', { href: `/console/templates?${kind}=${t.id}`, 'data-nav': true, 'aria-current': selected ? 'true' : undefined },
      h('span', { class: 'tpl-type' }, t.notification_type_key), h('span', { class: 'tpl-slot' }, `${t.brand_key} · ${t.language}`)));
  mount(
    root,
    header('Templates', 'What each type says, per channel, brand and language.'),
    h('div', { class: 'templates' },
      h('nav', { class: 'template-list', 'aria-label': 'Templates' },
        h('h2', {}, 'Email'), email.length ? h('ul', {}, email.map((t) => item('email', t, t === selectedEmail))) : h('p', { class: 'empty' }, 'None yet.'),
        h('h2', {}, 'Inbox'), inbox.length ? h('ul', {}, inbox.map((t) => item('inbox', t, t === selectedInbox))) : h('p', { class: 'empty' }, 'None yet.')),
      h('div', { class: 'template-main' },
        selectedEmail ? panel(`Email: ${selectedEmail.notification_type_key}`, emailEditor(selectedEmail, types))
          : selectedInbox ? panel(`Inbox: ${selectedInbox.notification_type_key}`, inboxEditor(selectedInbox))
            : h('p', { class: 'empty' }, 'Pick a template to edit it, or create one.'),
        panel('New template', newTemplateForm(types, brands, ctx)))),
  );
}

export default { id: 'templates', label: 'Templates', group: 'Messages', render };

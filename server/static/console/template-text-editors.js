// Editors of the text channels' templates (sms, chat, http): edit, save, and see what the render route
// makes of the saved template with sample variables. SMS shows its encoding and segment count (what
// the message costs); chat shows its text and each provider's blocks; http the request body.
import { api } from './api.js';
import { h, mount, field, formatTime, notice } from './dom.js';
import { actionForm, debounce, parseJsonObject } from './kit.js';

export function sampleVariables(type) {
  const sample = {};
  for (const v of type?.variables ?? []) sample[v.name] = `Sample ${v.name}`;
  return JSON.stringify(sample, null, 2);
}

/** A JSON value typed into a textarea (an object or a list, as `what` says), or a readable error. */
function parseJsonValue(text, what, shape) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${what} must be JSON.`);
  }
  const ok = shape === 'array' ? Array.isArray(value) : shape === 'object' ? value && typeof value === 'object' && !Array.isArray(value) : value && typeof value === 'object';
  if (!ok) throw new Error(`${what} must be a JSON ${shape === 'array' ? 'list' : shape === 'object' ? 'object' : 'object or list'}.`);
  return value;
}

const codeArea = (name, rows, value) => {
  const area = h('textarea', { name, rows, spellcheck: 'false', class: 'code' });
  if (value !== undefined && value !== null) area.value = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return area;
};

/**
 * The frame of every text editor: the form (its fields, its save), sample variables, and a preview
 * pane that `paint(rendered)` fills from POST /v1/{kind}-templates/render.
 */
function textEditor({ kind, template, types, fields, save, previewTitle, previewBody, paint }) {
  const type = types.find((t) => t.key === template.notification_type_key);
  const variables = codeArea('variables', 5, sampleVariables(type));
  const previewStatus = h('div', { 'aria-live': 'polite' });
  const refresh = async () => {
    try {
      const rendered = await api('POST', `/v1/${kind}-templates/render`, {
        notification_type_key: template.notification_type_key,
        brand_key: template.brand_key,
        language: template.language,
        variables: parseJsonObject(variables.value, 'Sample variables'),
      });
      mount(previewStatus);
      paint(rendered);
    } catch (error) {
      mount(previewStatus, notice('error', error.message));
    }
  };
  variables.addEventListener('input', debounce(refresh, 400));
  refresh();
  return h('div', { class: 'template-editor' },
    h('div', { class: 'editor' },
      actionForm(fields, 'Save and preview', async () => {
        const saved = await api('PUT', `/v1/${kind}-templates/${template.id}`, save());
        Object.assign(template, saved);
        await refresh();
        return `Saved ${formatTime(saved.updated_at)}.`;
      }),
      field('Sample variables (JSON)', variables, 'Used for the preview only.')),
    h('div', { class: 'preview-pane' }, h('h3', {}, previewTitle), previewStatus, previewBody));
}

const ENCODINGS = { gsm7: 'GSM-7', ucs2: 'UCS-2 (Unicode)' };

export function smsEditor(template, types) {
  const content = codeArea('content', 6, template.content);
  const bubble = h('p', { class: 'sms-bubble' });
  const meta = h('p', { class: 'sms-meta', 'aria-live': 'polite' });
  return textEditor({
    kind: 'sms',
    template,
    types,
    fields: [field('Text (with {{ placeholders }})', content, 'Sent as it renders: no markup. Characters outside GSM-7 switch the message to UCS-2, 70 characters a part.')],
    save: () => ({ content: content.value }),
    previewTitle: 'Preview',
    previewBody: h('div', { class: 'sms-preview' }, bubble, meta),
    paint(rendered) {
      bubble.textContent = rendered.text;
      mount(meta,
        h('span', { class: 'sms-encoding' }, ENCODINGS[rendered.encoding] ?? rendered.encoding), ' · ',
        h('span', { class: 'sms-segments' }, `${rendered.segments} ${rendered.segments === 1 ? 'segment' : 'segments'}`), ' · ',
        `${[...rendered.text].length} characters`);
    },
  });
}

const BLOCKS = [
  ['slack', 'Slack blocks (JSON list, Block Kit)', 'array'],
  ['teams', 'Teams card (JSON object, Adaptive Card)', 'object'],
  ['discord', 'Discord embeds (JSON list)', 'array'],
];

export function chatEditor(template, types) {
  const content = codeArea('content', 8, template.content);
  const blocks = BLOCKS.map(([provider, label, shape]) => [provider, label, shape, codeArea(`blocks.${provider}`, 4, template.blocks?.[provider])]);
  const text = h('pre', { class: 'preview-text' });
  const renderedBlocks = h('div');
  return textEditor({
    kind: 'chat',
    template,
    types,
    fields: [
      field('Content (Markdown: bold, italic, code, links, lists)', content, 'Each provider gets it in its own dialect.'),
      h('details', { class: 'blocks', open: blocks.some(([, , , area]) => area.value) }, h('summary', {}, "Provider blocks (optional, used instead of the content for that provider)"),
        blocks.map(([, label, , area]) => field(label, area))),
    ],
    save: () => {
      const given = {};
      for (const [provider, label, shape, area] of blocks) if (area.value.trim()) given[provider] = parseJsonValue(area.value, label.replace(/ \(.*/, ''), shape);
      return { content: content.value, blocks: Object.keys(given).length ? given : null };
    },
    previewTitle: 'Preview',
    previewBody: h('div', {}, text, renderedBlocks),
    paint(rendered) {
      text.textContent = rendered.text;
      mount(renderedBlocks, Object.entries(rendered.blocks ?? {}).filter(([, v]) => v !== undefined && v !== null).map(([provider, value]) =>
        h('details', {}, h('summary', {}, `${provider[0].toUpperCase()}${provider.slice(1)} blocks`), h('pre', { class: 'json' }, JSON.stringify(value, null, 2)))));
    },
  });
}

export function httpEditor(template, types) {
  const body = codeArea('body', 12, template.body);
  const out = h('pre', { class: 'json' });
  return textEditor({
    kind: 'http',
    template,
    types,
    fields: [field('Body (JSON with {{ placeholders }} in its strings)', body, 'A string that is one placeholder alone ("{{ order }}") takes the value itself.')],
    save: () => ({ body: parseJsonValue(body.value, 'The body', 'any') }),
    previewTitle: 'Request body',
    previewBody: out,
    paint(rendered) {
      out.textContent = JSON.stringify(rendered.body, null, 2);
    },
  });
}

/** What a new template of each text kind starts with. */
export const STARTERS = {
  sms: { content: 'Hello {{ contact.name | default: "there" }}: something happened.' },
  chat: { content: '*Hello {{ contact.name | default: "there" }}*: something happened.' },
  http: { body: { message: 'Hello {{ contact.name | default: "there" }}' } },
};

// Building the page with DOM calls only: text goes in as text (textContent), never as HTML, so
// nothing a tenant typed can become markup or script in the console.

/**
 * h('button', { class: 'primary', onclick: fn }, 'Save') -> an element. Attribute values are set as
 * attributes (on* keys become listeners); children are nodes or strings (text nodes).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's children. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let fieldCount = 0;
/** A labelled form field: h('label') tied to its control by id, with an optional hint. */
export function field(label, control, hint) {
  const id = control.id || `f${++fieldCount}`;
  control.id = id;
  const hintEl = hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hintEl);
}

export function formatTime(iso, style = 'medium') {
  if (!iso) return '—';
  const date = new Date(iso);
  return date.toLocaleString(undefined, { dateStyle: style, timeStyle: 'short' });
}

/** A status pill: the class follows the value (delivered, failed ...), the text is the value. */
export function pill(value) {
  return h('span', { class: `pill pill-${String(value).replace(/[^a-z_]/g, '')}` }, String(value).replace(/_/g, ' '));
}

/** A message region (role=alert for errors) that replaces its text. */
export function notice(kind, text) {
  return h('p', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

/** A table from rows: columns are [header, row => cell content]. */
export function table(columns, rows, empty = 'Nothing here yet.') {
  if (rows.length === 0) return h('p', { class: 'empty' }, empty);
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      {},
      h('thead', {}, h('tr', {}, columns.map(([header]) => h('th', { scope: 'col' }, header)))),
      h('tbody', {}, rows.map((row) => h('tr', {}, columns.map(([, cell]) => h('td', {}, cell(row)))))),
    ),
  );
}

/** Copies text to the clipboard, reporting on the button. */
export async function copyText(button, text) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    button.textContent = 'Select and copy';
  }
}

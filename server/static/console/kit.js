// Building blocks shared by the console's sections: page headers, panels, forms that report their
// own failures, confirmations, and paged lists.
import { api, ApiError } from './api.js';
import { h, mount, notice, copyText } from './dom.js';

export function header(title, lead, ...actions) {
  return h('header', { class: 'page-header' }, h('div', {}, h('h1', {}, title), lead ? h('p', { class: 'lead' }, lead) : null), actions.length ? h('div', { class: 'actions' }, actions) : null);
}

export function panel(title, ...children) {
  return h('section', { class: 'panel', 'aria-label': typeof title === 'string' ? title : undefined }, title ? h('h2', {}, title) : null, ...children);
}

/**
 * A form: on submit, `action(form)` runs with the button busy; its failure, or its success message
 * (a string it returns), shows in the form's status line.
 */
export function actionForm(fields, submitLabel, action, { inline = false } = {}) {
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const button = h('button', { type: 'submit', class: 'primary' }, submitLabel);
  const el = h('form', { method: 'post', novalidate: true, class: inline ? 'form inline' : 'form' }, fields, h('div', { class: 'form-actions' }, button, status));
  el.addEventListener('submit', async (event) => {
    event.preventDefault();
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    mount(status);
    clearFieldErrors(el);
    try {
      const message = await action(el);
      if (typeof message === 'string') mount(status, notice('success', message));
    } catch (error) {
      mount(status, notice('error', fieldErrorSummary(el, error)));
    } finally {
      button.disabled = false;
      button.removeAttribute('aria-busy');
    }
  });
  return el;
}

/**
 * The control of `form` a validation error's loc names: ["body", "headers", "X-Key"] is the control
 * named "headers.X-Key", else "headers". Forms name their controls as the API names its fields.
 */
function controlFor(form, loc) {
  const path = (loc ?? []).filter((l) => l !== 'body').map(String);
  for (let n = path.length; n > 0; n--) {
    const name = path.slice(0, n).join('.');
    const control = [...form.elements].find((c) => c.name === name && c.type !== 'hidden');
    if (control) return control;
  }
  return null;
}

let errorCount = 0;
function clearFieldErrors(form) {
  for (const el of form.querySelectorAll('.field-error')) el.remove();
  for (const control of form.querySelectorAll('[aria-invalid="true"]')) {
    control.removeAttribute('aria-invalid');
    if (control.dataset.describedby) control.setAttribute('aria-describedby', control.dataset.describedby);
    else control.removeAttribute('aria-describedby');
    delete control.dataset.describedby;
  }
}

/**
 * Puts each message of a 422 under the field it names (marked invalid, and read with it), and answers
 * what the form's status line says: the messages no field took, or a pointer to the marked fields.
 */
function fieldErrorSummary(form, error) {
  if (!(error instanceof ApiError) || error.status !== 422 || error.fields.length === 0) return error.message;
  const unplaced = [];
  let first = null;
  for (const detail of error.fields) {
    const control = controlFor(form, detail.loc);
    if (!control) {
      unplaced.push(`${(detail.loc ?? []).filter((l) => l !== 'body').join('.') || 'input'}: ${detail.msg}`);
      continue;
    }
    const id = `field-error-${++errorCount}`;
    if (control.getAttribute('aria-invalid') !== 'true') {
      control.dataset.describedby = control.getAttribute('aria-describedby') ?? '';
      control.setAttribute('aria-invalid', 'true');
    }
    control.setAttribute('aria-describedby', `${control.getAttribute('aria-describedby') ?? ''} ${id}`.trim());
    const where = control.closest('.field') ?? control.parentElement;
    where.append(h('p', { class: 'field-error', id }, detail.msg));
    first ??= control;
  }
  first?.focus();
  if (unplaced.length) return unplaced.join('; ');
  return error.fields.length === 1 ? 'Check the marked field.' : 'Check the marked fields.';
}

/** A button that asks first (when `question` is given), runs `action`, and reports a failure next to itself. */
export function actionButton(label, action, { question, kind = '', ariaLabel } = {}) {
  const button = h('button', { type: 'button', class: kind, 'aria-label': ariaLabel }, label);
  button.addEventListener('click', async () => {
    if (question && !window.confirm(question)) return;
    button.disabled = true;
    try {
      await action();
    } catch (error) {
      button.after(notice('error', error.message));
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

/** A list that pages with "Load more" through {items, next_cursor} answers. */
export async function pagedList(container, path, params, renderRows) {
  let cursor = null;
  const more = h('button', { type: 'button', class: 'more' }, 'Load more');
  const load = async () => {
    const search = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== ''));
    if (cursor) search.set('cursor', cursor);
    const page = await api('GET', `${path}?${search}`);
    cursor = page.next_cursor;
    renderRows(page.items, Boolean(cursor));
    more.hidden = !cursor;
  };
  more.addEventListener('click', () => load().catch((error) => more.after(notice('error', error.message))));
  await load();
  container.append(more);
}

export function debounce(fn, ms) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// The console's names of the channels, in the API's order (a test holds them to the server's list).
export const CHANNEL_NAMES = { inbox: 'Inbox', email: 'Email', push: 'Mobile push', web_push: 'Web push', sms: 'SMS', chat: 'Chat', http: 'HTTP' };
export const CHANNELS = Object.keys(CHANNEL_NAMES);

/** A JSON object typed into a textarea, or a readable error. */
export function parseJsonObject(text, what) {
  if (!text.trim()) return {};
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${what} must be JSON, like {"name": "Ann"}.`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${what} must be a JSON object.`);
  return value;
}

/** A GET that answers null where the API says 404 (a thing not set up, such as the http endpoint). */
export async function getOrNull(path) {
  try {
    return await api('GET', path);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/** Whether this install serves an API path (a section's parts appear once their routes do). */
export function served(paths, path) {
  return !paths || paths.size === 0 || paths.has(path);
}

/** A secret the API answers once: shown with a copy button and the words that it will not be shown again. */
export function shownOnce(title, value, id) {
  const copy = h('button', { type: 'button', onclick: () => copyText(copy, value) }, 'Copy');
  return h('div', { class: 'notice notice-success shown-once', role: 'status' },
    h('p', {}, h('strong', {}, title), ' Shown once: copy it now, it will not be shown again.'),
    h('div', { class: 'secret-row' }, h('code', { class: 'secret', id }, value), copy));
}

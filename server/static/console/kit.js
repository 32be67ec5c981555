// Building blocks shared by the console's sections: page headers, panels, forms that report their
// own failures, confirmations, and paged lists.
import { api } from './api.js';
import { h, mount, notice } from './dom.js';

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
    try {
      const message = await action(el);
      if (typeof message === 'string') mount(status, notice('success', message));
    } catch (error) {
      mount(status, notice('error', error.message));
    } finally {
      button.disabled = false;
      button.removeAttribute('aria-busy');
    }
  });
  return el;
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
export const CHANNEL_NAMES = { inbox: 'Inbox', email: 'Email', push: 'Mobile push', web_push: 'Web push' };
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

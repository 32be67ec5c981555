// <herald-inbox>: an inbox widget built on the Herald client (/sdk/herald.js). A bell button with
// the unread count, a popover with the contact's notifications (paged, live over the stream), mark
// read on click (then the action URL opens), "mark all read", and a preferences panel (type x
// channel). Shadow DOM; themable through CSS custom properties (see STYLES and the README);
// keyboard-operable (Escape closes, arrow keys move through the list) with a live region that
// announces new notifications. Content from notifications is set as text, never as HTML.
//
//   import { createHerald } from 'https://herald.example.com/sdk/herald.js';
//   import 'https://herald.example.com/sdk/herald-inbox.js';
//   document.querySelector('herald-inbox').client = createHerald({ url, getToken });
//
// Attributes: page-size (default 20), label (default "Notifications"), action-target (default
// "_self"; "_blank" opens action URLs in a new tab). Events (bubbling, composed): herald-notification
// (detail: item), herald-counts (detail: { unread }), herald-state (detail: stream state),
// herald-error (detail: error).

const STYLES = `
:host {
  --_accent: var(--herald-accent, #4f46e5);
  --_bg: var(--herald-bg, #ffffff);
  --_fg: var(--herald-fg, #111827);
  --_muted: var(--herald-muted, #6b7280);
  --_border: var(--herald-border, #e5e7eb);
  --_unread-bg: var(--herald-unread-bg, #eef2ff);
  --_hover-bg: var(--herald-hover-bg, #f9fafb);
  --_badge-bg: var(--herald-badge-bg, #dc2626);
  --_badge-fg: var(--herald-badge-fg, #ffffff);
  --_radius: var(--herald-radius, 10px);
  --_focus: var(--herald-focus-ring, 0 0 0 3px rgba(79, 70, 229, 0.45));
  display: inline-block;
  position: relative;
  font-family: var(--herald-font, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif);
  font-size: var(--herald-font-size, 14px);
  color: var(--_fg);
  line-height: 1.4;
}
:host([hidden]), [hidden] { display: none !important; }
button { font: inherit; color: inherit; cursor: pointer; }
button:focus-visible, input:focus-visible { outline: none; box-shadow: var(--_focus); }
.bell {
  position: relative; display: inline-flex; align-items: center; justify-content: center;
  width: var(--herald-bell-size, 40px); height: var(--herald-bell-size, 40px);
  border: 1px solid var(--_border); border-radius: 999px; background: var(--_bg); color: var(--herald-bell-color, var(--_fg));
}
.bell svg { width: 55%; height: 55%; }
.badge {
  position: absolute; top: -4px; right: -4px; min-width: 18px; height: 18px; padding: 0 5px;
  box-sizing: border-box; border-radius: 999px; background: var(--_badge-bg); color: var(--_badge-fg);
  font-size: 11px; font-weight: 700; line-height: 18px; text-align: center;
}
.panel {
  position: absolute; z-index: var(--herald-z-index, 1000); top: calc(100% + 8px); right: 0;
  width: var(--herald-width, 360px); max-width: 95vw; max-height: var(--herald-max-height, 480px);
  display: flex; flex-direction: column; background: var(--_bg); color: var(--_fg);
  border: 1px solid var(--_border); border-radius: var(--_radius);
  box-shadow: var(--herald-shadow, 0 10px 30px rgba(0, 0, 0, 0.15)); overflow: hidden;
}
:host([placement="left"]) .panel { right: auto; left: 0; }
.header { display: flex; align-items: center; gap: 8px; padding: 10px 12px; border-bottom: 1px solid var(--_border); }
.header h2 { flex: 1; margin: 0; font-size: 1em; font-weight: 650; }
.link { border: 0; background: none; padding: 4px 6px; border-radius: 6px; color: var(--_accent); font-size: 0.9em; white-space: nowrap; }
.link:hover { background: var(--_hover-bg); }
.link[disabled] { color: var(--_muted); cursor: default; }
.body { overflow-y: auto; flex: 1; }
.list { list-style: none; margin: 0; padding: 0; }
.item { display: flex; align-items: flex-start; border-bottom: 1px solid var(--_border); }
.item.unread { background: var(--_unread-bg); }
.open {
  flex: 1; display: block; text-align: left; border: 0; background: none; padding: 10px 12px; min-width: 0;
}
.open:hover { background: var(--_hover-bg); }
.title { display: block; font-weight: 600; overflow-wrap: anywhere; }
.item:not(.unread) .title { font-weight: 500; }
.text { display: block; margin-top: 2px; color: var(--_fg); overflow-wrap: anywhere; white-space: pre-line; }
.time { display: block; margin-top: 4px; color: var(--_muted); font-size: 0.85em; }
.dot { display: inline-block; width: 8px; height: 8px; margin-right: 6px; border-radius: 999px; background: var(--_accent); vertical-align: middle; }
.toggle { border: 0; background: none; padding: 10px; color: var(--_muted); font-size: 0.85em; }
.toggle:hover { color: var(--_accent); }
.empty, .status { margin: 0; padding: 24px 12px; text-align: center; color: var(--_muted); }
.more { display: block; width: calc(100% - 24px); margin: 10px 12px; padding: 6px; border: 1px solid var(--_border); border-radius: 6px; background: var(--_bg); }
.prefs { padding: 8px 12px 12px; }
.prefs table { width: 100%; border-collapse: collapse; }
.prefs th, .prefs td { padding: 6px 4px; text-align: center; border-bottom: 1px solid var(--_border); }
.prefs th[scope="row"] { text-align: left; font-weight: 500; }
.prefs thead th { color: var(--_muted); font-weight: 500; font-size: 0.85em; }
.prefs input { width: 16px; height: 16px; accent-color: var(--_accent); }
.visually-hidden { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
`;

const BELL_SVG =
  '<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true" focusable="false"><path d="M18 8a6 6 0 0 0-12 0c0 7-3 9-3 9h18s-3-2-3-9"/><path d="M13.73 21a2 2 0 0 1-3.46 0"/></svg>';

const TEMPLATE = `
<button class="bell" part="bell" type="button" aria-haspopup="dialog" aria-expanded="false" aria-controls="panel">
  ${BELL_SVG}<span class="badge" part="badge" aria-hidden="true" hidden></span>
</button>
<div class="visually-hidden" role="status" aria-live="polite" aria-atomic="true" data-live></div>
<div class="panel" part="panel" id="panel" role="dialog" aria-labelledby="heading" hidden>
  <div class="header">
    <h2 id="heading" tabindex="-1"></h2>
    <button class="link" type="button" data-action="read-all">Mark all read</button>
    <button class="link" type="button" data-action="prefs" aria-controls="prefs">Preferences</button>
  </div>
  <div class="body">
    <section data-view="list">
      <ul class="list" part="list" aria-labelledby="heading"></ul>
      <p class="empty" hidden>No notifications yet.</p>
      <p class="status" data-status hidden></p>
      <button class="more" type="button" data-action="more" hidden>Load more</button>
    </section>
    <section class="prefs" id="prefs" data-view="prefs" aria-label="Notification preferences" hidden>
      <p class="status" data-prefs-status hidden></p>
      <table hidden><thead><tr><th scope="col"><span class="visually-hidden">Notification type</span></th></tr></thead><tbody></tbody></table>
    </section>
  </div>
</div>`;

// What a contact reads for each channel (a test holds the keys to the server's list).
const CHANNEL_LABELS = {
  inbox: 'In-app',
  email: 'Email',
  push: 'Mobile push',
  web_push: 'Browser push',
  sms: 'Text message',
  chat: 'Chat',
  http: 'Webhook',
};

let sharedSheet = null;
function styleSheet() {
  // A constructed stylesheet is not an inline <style>, so the widget works under a strict CSP
  // (style-src without 'unsafe-inline') on the embedding page.
  if (!sharedSheet && typeof CSSStyleSheet === 'function' && 'replaceSync' in CSSStyleSheet.prototype) {
    sharedSheet = new CSSStyleSheet();
    sharedSheet.replaceSync(STYLES);
  }
  return sharedSheet;
}

export class HeraldInboxElement extends HTMLElement {
  #client = null;
  #stream = null;
  #root;
  #els;
  #items = new Map(); // id -> item, newest first by insertion order of the list
  #order = [];
  #cursor = null;
  #loaded = false;
  #loading = false;
  #unread = null;
  #open = false;
  #view = 'list';
  #onDocumentClick = (event) => {
    if (this.#open && !event.composedPath().includes(this)) this.close(false);
  };

  constructor() {
    super();
    this.#root = this.attachShadow({ mode: 'open', delegatesFocus: false });
    const sheet = styleSheet();
    if (sheet) this.#root.adoptedStyleSheets = [sheet];
    else {
      const style = document.createElement('style');
      style.textContent = STYLES;
      this.#root.append(style);
    }
    const template = document.createElement('template');
    template.innerHTML = TEMPLATE; // static markup only; notification content is set as text below
    this.#root.append(template.content.cloneNode(true));
    const q = (selector) => this.#root.querySelector(selector);
    this.#els = {
      bell: q('.bell'),
      badge: q('.badge'),
      live: q('[data-live]'),
      panel: q('.panel'),
      heading: q('#heading'),
      readAll: q('[data-action="read-all"]'),
      prefsToggle: q('[data-action="prefs"]'),
      listView: q('[data-view="list"]'),
      list: q('.list'),
      empty: q('.empty'),
      status: q('[data-status]'),
      more: q('[data-action="more"]'),
      prefsView: q('[data-view="prefs"]'),
      prefsStatus: q('[data-prefs-status]'),
      prefsTable: q('.prefs table'),
    };
    this.#els.bell.addEventListener('click', () => (this.#open ? this.close() : this.open()));
    this.#els.readAll.addEventListener('click', () => void this.markAllRead());
    this.#els.prefsToggle.addEventListener('click', () => this.#showView(this.#view === 'prefs' ? 'list' : 'prefs'));
    this.#els.more.addEventListener('click', () => void this.#loadPage());
    this.#els.list.addEventListener('click', (event) => this.#onListClick(event));
    this.#root.addEventListener('keydown', (event) => this.#onKeyDown(event));
    this.#els.prefsTable.addEventListener('change', (event) => void this.#onPreferenceChange(event));
  }

  static get observedAttributes() {
    return ['label'];
  }

  attributeChangedCallback() {
    this.#renderLabels();
  }

  /** The HeraldClient (from createHerald) the widget uses. Setting it (re)connects the stream. */
  get client() {
    return this.#client;
  }

  set client(client) {
    if (client === this.#client) return;
    this.#disconnectStream();
    this.#client = client;
    this.#reset();
    if (client && this.isConnected) this.#connectStream();
  }

  /** The unread count as last reported by the server (null before the first answer). */
  get unreadCount() {
    return this.#unread;
  }

  connectedCallback() {
    this.#renderLabels();
    document.addEventListener('click', this.#onDocumentClick, true);
    if (this.#client && !this.#stream) this.#connectStream();
  }

  disconnectedCallback() {
    document.removeEventListener('click', this.#onDocumentClick, true);
    this.#disconnectStream();
  }

  /** Opens the popover, loads the first page if needed and moves focus into it. */
  async open() {
    if (this.#open) return;
    this.#open = true;
    this.#els.panel.hidden = false;
    this.#els.bell.setAttribute('aria-expanded', 'true');
    this.#showView('list', false);
    if (!this.#loaded && this.#client) await this.#loadPage();
    const first = this.#els.list.querySelector('.open');
    (first ?? this.#els.heading).focus();
  }

  /** Closes the popover; focus returns to the bell unless the user clicked elsewhere. */
  close(restoreFocus = true) {
    if (!this.#open) return;
    this.#open = false;
    this.#els.panel.hidden = true;
    this.#els.bell.setAttribute('aria-expanded', 'false');
    if (restoreFocus) this.#els.bell.focus();
  }

  async markAllRead() {
    if (!this.#client) return;
    this.#els.readAll.disabled = true;
    try {
      await this.#client.markAllRead();
      const now = new Date().toISOString();
      for (const item of this.#items.values()) if (!item.read_at) item.read_at = now;
      this.#renderList();
      this.#announce('All notifications marked as read');
      await this.#refreshCounts();
    } catch (error) {
      this.#fail(error, 'Could not mark all as read');
    } finally {
      this.#els.readAll.disabled = false;
    }
  }

  // ---- stream ------------------------------------------------------------------------------------

  #connectStream() {
    this.#stream = this.#client.connect({
      onNotification: (item) => this.#onNotification(item),
      onUpdated: (item) => this.#onUpdated(item),
      onCounts: (counts) => this.#setUnread(counts.unread),
      onStateChange: (state) => {
        this.setAttribute('data-state', state);
        this.#emit('herald-state', state);
      },
      onError: (error) => this.#emit('herald-error', error),
    });
  }

  #disconnectStream() {
    if (this.#stream) this.#stream.close();
    this.#stream = null;
  }

  #reset() {
    this.#items.clear();
    this.#order = [];
    this.#cursor = null;
    this.#loaded = false;
    this.#unread = null;
    this.#renderBadge();
    this.#renderList();
  }

  #onNotification(item) {
    if (!item || !item.id) return;
    if (!this.#items.has(item.id)) {
      this.#items.set(item.id, item);
      this.#order.unshift(item.id);
    } else {
      Object.assign(this.#items.get(item.id), item);
    }
    this.#renderList();
    this.#announce(`New notification: ${item.title || 'untitled'}`);
    this.#emit('herald-notification', item);
  }

  #onUpdated(change) {
    if (!change) return;
    const known = change.id && this.#items.get(change.id);
    if (known) {
      Object.assign(known, change);
      if (known.archived_at) {
        this.#items.delete(known.id);
        this.#order = this.#order.filter((id) => id !== known.id);
      }
      this.#renderList();
    } else if (this.#loaded && (change.all || !change.id)) {
      // A bulk change (read-all from another tab): the visible page is stale, reload it.
      void this.#reload();
    }
  }

  async #reload() {
    this.#items.clear();
    this.#order = [];
    this.#cursor = null;
    this.#loaded = false;
    await this.#loadPage();
  }

  async #refreshCounts() {
    try {
      const counts = await this.#client.getCounts();
      this.#setUnread(counts.unread);
    } catch (error) {
      this.#emit('herald-error', error);
    }
  }

  #setUnread(unread) {
    if (typeof unread !== 'number') return;
    this.#unread = unread;
    if (unread === 0) {
      // Nothing unread on the server (e.g. "mark all read" in another tab): the loaded items agree.
      let changed = false;
      for (const item of this.#items.values()) {
        if (!item.read_at && !item.archived_at) {
          item.read_at = new Date().toISOString();
          changed = true;
        }
      }
      if (changed) this.#renderList();
    }
    this.#renderBadge();
    this.#emit('herald-counts', { unread });
  }

  // ---- list --------------------------------------------------------------------------------------

  async #loadPage() {
    if (this.#loading || !this.#client) return;
    this.#loading = true;
    this.#setStatus(this.#loaded ? null : 'Loading…');
    this.#els.more.disabled = true;
    try {
      const size = Number(this.getAttribute('page-size')) || 20;
      const page = await this.#client.listNotifications({ limit: size, cursor: this.#cursor ?? undefined });
      for (const item of page.items) {
        if (this.#items.has(item.id)) continue;
        this.#items.set(item.id, item);
        this.#order.push(item.id);
      }
      this.#cursor = page.next_cursor ?? null;
      this.#loaded = true;
      this.#setStatus(null);
      if (typeof page.unread_count === 'number') this.#setUnread(page.unread_count);
      this.#renderList();
    } catch (error) {
      this.#setStatus('Could not load notifications.');
      this.#fail(error, 'Could not load notifications');
    } finally {
      this.#loading = false;
      this.#els.more.disabled = false;
    }
  }

  async #onListClick(event) {
    const button = event.target.closest('button');
    if (!button) return;
    const li = button.closest('li[data-id]');
    const item = li && this.#items.get(li.dataset.id);
    if (!item) return;
    if (button.classList.contains('toggle')) {
      await this.#setRead(item, !item.read_at);
      return;
    }
    if (!item.read_at) await this.#setRead(item, true);
    const url = safeUrl(item.action_url);
    if (!url) return;
    const target = this.getAttribute('action-target') || '_self';
    if (target === '_self') window.location.assign(url);
    else window.open(url, target, 'noopener');
  }

  async #setRead(item, read) {
    const previous = item.read_at;
    item.read_at = read ? new Date().toISOString() : null;
    this.#renderList();
    try {
      const updated = read ? await this.#client.markRead(item.id) : await this.#client.markUnread(item.id);
      if (updated && updated.id) Object.assign(item, updated);
      this.#renderList();
      await this.#refreshCounts();
    } catch (error) {
      item.read_at = previous;
      this.#renderList();
      this.#fail(error, 'Could not update the notification');
    }
  }

  #renderList() {
    const { list, empty, more } = this.#els;
    const focusedId = this.#root.activeElement && this.#root.activeElement.closest('li[data-id]')?.dataset.id;
    const focusedToggle = this.#root.activeElement?.classList.contains('toggle');
    const rows = [];
    for (const id of this.#order) {
      const item = this.#items.get(id);
      if (item) rows.push(this.#renderItem(item));
    }
    list.replaceChildren(...rows);
    empty.hidden = !this.#loaded || rows.length > 0;
    more.hidden = !this.#cursor;
    if (focusedId) {
      const li = list.querySelector(`li[data-id="${CSS.escape(focusedId)}"]`);
      li?.querySelector(focusedToggle ? '.toggle' : '.open')?.focus();
    }
  }

  #renderItem(item) {
    const li = document.createElement('li');
    li.className = item.read_at ? 'item' : 'item unread';
    li.dataset.id = item.id;
    li.setAttribute('part', item.read_at ? 'item' : 'item unread');
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'open';
    const title = document.createElement('span');
    title.className = 'title';
    if (!item.read_at) {
      const dot = document.createElement('span');
      dot.className = 'dot';
      dot.setAttribute('aria-hidden', 'true');
      title.append(dot);
    }
    title.append(document.createTextNode(item.title || 'Notification'));
    open.append(title);
    if (item.body) {
      const text = document.createElement('span');
      text.className = 'text';
      text.textContent = item.body;
      open.append(text);
    }
    const time = document.createElement('time');
    time.className = 'time';
    if (item.created_at) {
      time.dateTime = item.created_at;
      time.textContent = relativeTime(item.created_at);
      time.title = new Date(item.created_at).toLocaleString();
    }
    open.append(time);
    const state = item.read_at ? '' : 'Unread. ';
    open.setAttribute('aria-label', `${state}${item.title || 'Notification'}${item.body ? `. ${item.body}` : ''}`);
    const toggle = document.createElement('button');
    toggle.type = 'button';
    toggle.className = 'toggle';
    toggle.textContent = item.read_at ? 'Mark unread' : 'Mark read';
    toggle.setAttribute('aria-label', `${item.read_at ? 'Mark as unread' : 'Mark as read'}: ${item.title || 'Notification'}`);
    li.append(open, toggle);
    return li;
  }

  #renderBadge() {
    const { badge, bell } = this.#els;
    const label = this.getAttribute('label') || 'Notifications';
    const unread = this.#unread ?? 0;
    badge.hidden = unread === 0;
    badge.textContent = unread > 99 ? '99+' : String(unread);
    bell.setAttribute('aria-label', unread > 0 ? `${label}, ${unread} unread` : label);
  }

  #renderLabels() {
    const label = this.getAttribute('label') || 'Notifications';
    this.#els.heading.textContent = label;
    this.#renderBadge();
  }

  #setStatus(text) {
    this.#els.status.hidden = !text;
    this.#els.status.textContent = text ?? '';
  }

  // ---- preferences -------------------------------------------------------------------------------

  async #showView(view, focus = true) {
    this.#view = view;
    this.#els.listView.hidden = view !== 'list';
    this.#els.prefsView.hidden = view !== 'prefs';
    // A plain button whose label names where it leads (not a toggle: its label changes).
    this.#els.prefsToggle.textContent = view === 'prefs' ? 'Back' : 'Preferences';
    if (view === 'prefs') this.#els.prefsToggle.setAttribute('aria-label', 'Back to notifications');
    else this.#els.prefsToggle.removeAttribute('aria-label');
    this.#els.readAll.hidden = view === 'prefs';
    this.#els.heading.textContent = view === 'prefs' ? 'Preferences' : this.getAttribute('label') || 'Notifications';
    if (view === 'prefs') {
      await this.#loadPreferences();
      if (focus) (this.#els.prefsTable.querySelector('input') ?? this.#els.heading).focus();
    }
  }

  async #loadPreferences() {
    if (!this.#client) return;
    this.#els.prefsStatus.hidden = false;
    this.#els.prefsStatus.textContent = 'Loading…';
    try {
      const matrix = await this.#client.getPreferences();
      this.#renderPreferences(matrix.preferences ?? []);
      this.#els.prefsStatus.hidden = true;
    } catch (error) {
      this.#els.prefsStatus.textContent = 'Could not load preferences.';
      this.#fail(error, 'Could not load preferences');
    }
  }

  #renderPreferences(preferences) {
    const table = this.#els.prefsTable;
    const channels = [...new Set(preferences.map((p) => p.channel))];
    const types = [...new Set(preferences.map((p) => p.type))];
    const headRow = table.tHead.rows[0];
    while (headRow.cells.length > 1) headRow.deleteCell(1);
    for (const channel of channels) {
      const th = document.createElement('th');
      th.scope = 'col';
      th.textContent = CHANNEL_LABELS[channel] ?? channel;
      headRow.append(th);
    }
    const body = table.tBodies[0];
    body.replaceChildren();
    for (const type of types) {
      const row = body.insertRow();
      const th = document.createElement('th');
      th.scope = 'row';
      th.textContent = typeLabel(type);
      row.append(th);
      for (const channel of channels) {
        const cell = row.insertCell();
        const pref = preferences.find((p) => p.type === type && p.channel === channel);
        if (!pref) continue;
        const input = document.createElement('input');
        input.type = 'checkbox';
        input.checked = Boolean(pref.enabled);
        input.dataset.type = type;
        input.dataset.channel = channel;
        input.setAttribute('aria-label', `${typeLabel(type)}: ${CHANNEL_LABELS[channel] ?? channel}`);
        if (pref.opt_out === false) {
          // The tenant made this type mandatory: the choice is shown but cannot be changed.
          input.disabled = true;
          input.title = 'Always on';
        }
        cell.append(input);
      }
    }
    table.hidden = types.length === 0;
    if (types.length === 0) {
      this.#els.prefsStatus.hidden = false;
      this.#els.prefsStatus.textContent = 'Nothing to configure yet.';
    }
  }

  async #onPreferenceChange(event) {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.dataset.type) return;
    const { type, channel } = input.dataset;
    const enabled = input.checked;
    input.disabled = true;
    try {
      const matrix = await this.#client.setPreference(type, channel, enabled);
      this.#renderPreferences(matrix.preferences ?? []);
      this.#els.prefsTable.querySelector(`input[data-type="${CSS.escape(type)}"][data-channel="${CSS.escape(channel)}"]`)?.focus();
      this.#announce(`${typeLabel(type)} by ${CHANNEL_LABELS[channel] ?? channel}: ${enabled ? 'on' : 'off'}`);
    } catch (error) {
      input.checked = !enabled;
      input.disabled = false;
      this.#fail(error, 'Could not save the preference');
    }
  }

  // ---- keyboard and helpers ----------------------------------------------------------------------

  #onKeyDown(event) {
    if (event.key === 'Escape' && this.#open) {
      event.stopPropagation();
      this.close();
      return;
    }
    const active = this.#root.activeElement;
    if (!active || !active.classList.contains('open')) return;
    const buttons = [...this.#els.list.querySelectorAll('.open')];
    const index = buttons.indexOf(active);
    let next = null;
    if (event.key === 'ArrowDown') next = buttons[Math.min(buttons.length - 1, index + 1)];
    else if (event.key === 'ArrowUp') next = buttons[Math.max(0, index - 1)];
    else if (event.key === 'Home') next = buttons[0];
    else if (event.key === 'End') next = buttons[buttons.length - 1];
    if (next) {
      event.preventDefault();
      next.focus();
    }
  }

  #announce(text) {
    // Clear first so repeating the same text is announced again.
    this.#els.live.textContent = '';
    setTimeout(() => (this.#els.live.textContent = text), 50);
  }

  #fail(error, message) {
    this.#announce(message);
    this.#emit('herald-error', error);
  }

  #emit(name, detail) {
    this.dispatchEvent(new CustomEvent(name, { detail, bubbles: true, composed: true }));
  }
}

function safeUrl(value) {
  if (typeof value !== 'string' || !value) return null;
  try {
    const url = new URL(value, document.baseURI);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

function typeLabel(key) {
  const words = String(key).replace(/[_.-]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function relativeTime(iso) {
  const then = new Date(iso).getTime();
  if (!Number.isFinite(then)) return '';
  const seconds = Math.round((then - Date.now()) / 1000);
  const format = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  const abs = Math.abs(seconds);
  if (abs < 60) return format.format(seconds, 'second');
  if (abs < 3600) return format.format(Math.round(seconds / 60), 'minute');
  if (abs < 86400) return format.format(Math.round(seconds / 3600), 'hour');
  return format.format(Math.round(seconds / 86400), 'day');
}

if (!customElements.get('herald-inbox')) customElements.define('herald-inbox', HeraldInboxElement);

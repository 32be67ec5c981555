// Herald browser client: a dependency-free ES module served by Herald at /sdk/herald.js (types at
// /sdk/herald.d.ts). It talks to Herald's /v1 contact routes with a short-lived contact token that
// the tenant's own backend mints (POST /v1/contacts/tokens with its service key, which never reaches
// the browser). The token is fetched through the `getToken` function given at creation, again shortly
// before it expires (from expires_in) and once more whenever Herald answers 401.
//
// The live stream uses fetch and a small Server-Sent Events parser rather than EventSource, because
// EventSource cannot send the Authorization header. It reconnects with exponential backoff and
// Last-Event-ID so Herald replays what was missed, and it re-reads the unread count from the server
// after every (re)connect, so the counts shown always equal the server's.

// The API's channel order, for sorting preferences (a test holds it to the server's list).
const CHANNEL_ORDER = ['inbox', 'email', 'push', 'web_push', 'sms', 'chat', 'http'];

/** An error answer from Herald: status, machine code and message (ErrorResponse or HTTPValidationError). */
export class HeraldError extends Error {
  constructor(status, body) {
    const detail = body && body.detail;
    const message = typeof detail === 'string' ? detail : Array.isArray(detail) ? detail.map((d) => d.msg).join('; ') : `HTTP ${status}`;
    super(message);
    this.name = 'HeraldError';
    this.status = status;
    this.code = body && typeof body.code === 'string' ? body.code : status === 422 ? 'validation_error' : 'http_error';
    this.body = body ?? null;
  }
}

/** Creates a client. `url` is Herald's base URL; `getToken` fetches a contact token from your backend. */
export function createHerald(options) {
  return new HeraldClient(options);
}

// Internal hooks shared with HeraldStream, kept off the public surface.
const internal = Symbol('herald.internal');

export class HeraldClient {
  #url;
  #getToken;
  #fetch;
  #now;
  #token = null;
  #contactId = null;
  #expiresAt = 0;
  #refreshMarginMs = 0;
  #pendingToken = null;

  constructor(options) {
    if (!options || !options.url) throw new TypeError('createHerald: url is required');
    if (typeof options.getToken !== 'function') throw new TypeError('createHerald: getToken must be a function');
    this.#url = String(options.url).replace(/\/+$/, '');
    this.#getToken = options.getToken;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#now = options.now ?? (() => Date.now());
    this[internal] = {
      token: (force) => this.#ensureToken(force),
      contactPath: () => this.#contactPath(),
      fetch: (input, init) => this.#fetch(input, init),
      now: () => this.#now(),
      // Milliseconds until the current token is due for renewal (0 when it already is).
      renewalDueInMs: () => Math.max(0, this.#expiresAt - this.#refreshMarginMs - this.#now()),
    };
  }

  /** Herald's base URL, without a trailing slash. */
  get url() {
    return this.#url;
  }

  /** The contact the current token acts as (known after the first request). */
  get contactId() {
    return this.#contactId;
  }

  /** A valid contact token: the cached one, or a fresh one from getToken when close to expiry. */
  async token() {
    return this.#ensureToken(false);
  }

  // ---- inbox -------------------------------------------------------------------------------------

  /** One page of the inbox: { items, next_cursor, unread_count }. Pass next_cursor back as cursor. */
  async listNotifications(options = {}) {
    const query = new URLSearchParams();
    if (options.limit != null) query.set('limit', String(options.limit));
    if (options.cursor) query.set('cursor', options.cursor);
    if (options.status) query.set('status', options.status);
    if (options.archived != null) query.set('archived', String(Boolean(options.archived)));
    const qs = query.toString();
    return this.#request('GET', `/notifications${qs ? `?${qs}` : ''}`);
  }

  /** The counts the badge shows, as the server computes them: { unread }. */
  async getCounts() {
    const page = await this.listNotifications({ limit: 1 });
    return { unread: page.unread_count };
  }

  /** Changes any of read / seen / archived on one notification; answers the updated item. */
  async updateNotification(id, changes) {
    return this.#request('PATCH', `/notifications/${encodeURIComponent(id)}`, changes);
  }

  markRead(id) {
    return this.updateNotification(id, { read: true });
  }

  markUnread(id) {
    return this.updateNotification(id, { read: false });
  }

  markSeen(id) {
    return this.updateNotification(id, { seen: true });
  }

  archive(id) {
    return this.updateNotification(id, { archived: true });
  }

  unarchive(id) {
    return this.updateNotification(id, { archived: false });
  }

  /** Marks every unread notification read: { updated }. */
  async markAllRead() {
    return this.#request('POST', '/notifications/read-all', {});
  }

  // ---- preferences and language ------------------------------------------------------------------

  /** The preference matrix: { preferences: [{ type, channel, enabled, source }] }. */
  async getPreferences() {
    const result = await this.#request('GET', '/preferences');
    return sortPreferences(result);
  }

  /** Turns one notification type x channel on or off; answers the whole matrix. */
  async setPreference(type, channel, enabled) {
    const result = await this.#request('PUT', '/preferences', { type, channel, enabled: Boolean(enabled) });
    return sortPreferences(result);
  }

  /** Sets the contact's preferred language (BCP 47, e.g. "de"); answers the contact. */
  async setLanguage(language) {
    return this.#request('PUT', '/language', { language });
  }

  // ---- web push ----------------------------------------------------------------------------------

  /** The tenant's VAPID public key (base64url), used as the applicationServerKey. */
  async getWebPushPublicKey() {
    const result = await this.#request('GET', '/v1/web-push/public-key', undefined, { absolute: true });
    return result.public_key;
  }

  /**
   * Subscribes this browser to web push and registers the subscription with Herald. `registration`
   * is your ServiceWorkerRegistration (its worker imports /sdk/herald-sw.js). Asks for permission
   * when it has not been granted yet: call it from a user gesture.
   */
  async registerWebPush(registration) {
    if (!registration || !registration.pushManager) throw new TypeError('registerWebPush: a ServiceWorkerRegistration is required');
    if (typeof Notification !== 'undefined' && Notification.permission === 'default') {
      const permission = await Notification.requestPermission();
      if (permission !== 'granted') throw new HeraldError(0, { detail: 'Notification permission was not granted', code: 'permission_denied' });
    }
    const publicKey = await this.getWebPushPublicKey();
    const applicationServerKey = base64UrlToBytes(publicKey);
    let subscription = await registration.pushManager.getSubscription();
    if (subscription && !sameKey(subscription.options && subscription.options.applicationServerKey, applicationServerKey)) {
      // Subscribed under another VAPID key (rotated, or another tenant): push services would refuse it.
      await subscription.unsubscribe();
      subscription = null;
    }
    if (!subscription) subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey });
    return this.#request('POST', '/push-subscriptions', { provider: 'webpush', subscription: subscriptionBody(subscription) });
  }

  /** Removes this browser's web push subscription from Herald and from the push service. */
  async unregisterWebPush(registration) {
    if (!registration || !registration.pushManager) throw new TypeError('unregisterWebPush: a ServiceWorkerRegistration is required');
    const subscription = await registration.pushManager.getSubscription();
    if (!subscription) return false;
    // Registering an existing destination answers its id (200), which the DELETE route needs.
    const registered = await this.#request('POST', '/push-subscriptions', { provider: 'webpush', subscription: subscriptionBody(subscription) });
    if (registered && registered.id) await this.#request('DELETE', `/push-subscriptions/${encodeURIComponent(registered.id)}`);
    await subscription.unsubscribe();
    return true;
  }

  // ---- live stream -------------------------------------------------------------------------------

  /**
   * Opens the contact's live stream. Handlers: onNotification(item), onUpdated(payload),
   * onCounts({ unread }), onStateChange(state), onError(error). Answers a HeraldStream; call close().
   */
  connect(handlers = {}, options = {}) {
    const stream = new HeraldStream(this, handlers, options);
    stream.start();
    return stream;
  }

  // ---- plumbing ----------------------------------------------------------------------------------

  async #ensureToken(force) {
    if (!force && this.#token && this.#now() < this.#expiresAt - this.#refreshMarginMs) return this.#token;
    // One getToken call at a time: concurrent requests share it.
    if (!this.#pendingToken) {
      this.#pendingToken = (async () => {
        try {
          const issued = normaliseToken(await this.#getToken());
          const now = this.#now();
          this.#token = issued.token;
          this.#contactId = issued.contactId;
          this.#expiresAt = now + issued.expiresIn * 1000;
          // Renew shortly before expiry: 10% of the lifetime, between 5 s and 60 s, and never more
          // than half of it (short-lived tokens are still used).
          this.#refreshMarginMs = Math.min(60_000, Math.max(5_000, issued.expiresIn * 100), issued.expiresIn * 500);
          return issued.token;
        } finally {
          this.#pendingToken = null;
        }
      })();
    }
    return this.#pendingToken;
  }

  #contactPath() {
    return `/v1/contacts/${encodeURIComponent(this.#contactId)}`;
  }

  async #request(method, path, body, options = {}) {
    let retriedAuth = false;
    let rateLimited = 0;
    for (;;) {
      const token = await this.#ensureToken(retriedAuth);
      const url = this.#url + (options.absolute ? path : this.#contactPath() + path);
      const headers = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
      const init = { method, headers, cache: 'no-store' };
      if (body !== undefined) {
        headers['Content-Type'] = 'application/json';
        init.body = JSON.stringify(body);
      }
      const response = await this.#fetch(url, init);
      if (response.status === 401 && !retriedAuth) {
        retriedAuth = true; // the token may have been revoked or expired early: ask the backend once more
        continue;
      }
      if (response.status === 429 && rateLimited < 2) {
        rateLimited += 1;
        await sleep(retryAfterMs(response.headers.get('Retry-After')));
        continue;
      }
      if (response.status === 204) return undefined;
      const text = await response.text();
      let data = null;
      if (text) {
        try {
          data = JSON.parse(text);
        } catch {
          data = { detail: text };
        }
      }
      if (!response.ok) throw new HeraldError(response.status, data);
      return data;
    }
  }
}

/**
 * A live subscription to the contact's stream (GET /v1/contacts/{id}/stream). Reconnects on its own
 * with exponential backoff and jitter, sending Last-Event-ID; stops for good on close() or on a 403/404.
 */
export class HeraldStream {
  #client;
  #handlers;
  #options;
  #state = 'idle';
  #closed = false;
  #abort = null;
  #wake = null;
  #lastEventId = null;
  #retryMs;
  #counts = null;
  #countsVersion = 0;
  #countsTimer = null;
  #renewTimer = null;
  #immediate = false;

  constructor(client, handlers, options) {
    this.#client = client;
    this.#handlers = handlers;
    this.#options = {
      minRetryMs: options.minRetryMs ?? 1000,
      maxRetryMs: options.maxRetryMs ?? 30_000,
      // Herald sends a heartbeat comment every 15 s: silence for longer means a dead connection.
      idleTimeoutMs: options.idleTimeoutMs ?? 45_000,
    };
    this.#retryMs = this.#options.minRetryMs;
    this.#lastEventId = options.lastEventId ?? null;
  }

  /** connecting | open | reconnecting | closed */
  get state() {
    return this.#state;
  }

  /** The id of the last event received (sent as Last-Event-ID on reconnect). */
  get lastEventId() {
    return this.#lastEventId;
  }

  /** The latest counts from the server ({ unread }), or null before the first. */
  get counts() {
    return this.#counts;
  }

  start() {
    if (this.#state !== 'idle') return;
    // Back online: reconnect now instead of waiting out the backoff.
    if (typeof window !== 'undefined') window.addEventListener('online', this.#onOnline);
    void this.#run();
  }

  #onOnline = () => this.reconnect();

  /** Drops the current connection and reconnects at once (e.g. after the page comes back online). */
  reconnect() {
    if (this.#closed) return;
    this.#retryMs = this.#options.minRetryMs;
    this.#immediate = true;
    if (this.#abort) this.#abort.abort();
    if (this.#wake) this.#wake();
  }

  close() {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#countsTimer);
    clearTimeout(this.#renewTimer);
    if (typeof window !== 'undefined') window.removeEventListener('online', this.#onOnline);
    if (this.#abort) this.#abort.abort();
    if (this.#wake) this.#wake();
    this.#setState('closed');
  }

  async #run() {
    let failures = 0;
    let forceToken = false;
    let first = true;
    while (!this.#closed) {
      this.#setState(first ? 'connecting' : 'reconnecting');
      first = false;
      let outcome;
      try {
        outcome = await this.#connectOnce(forceToken);
      } catch (error) {
        outcome = this.#closed ? 'closed' : 'failed';
        if (!this.#closed && error && error.name !== 'AbortError') this.#emit('onError', error);
      }
      if (this.#closed || outcome === 'fatal') break;
      if (outcome === 'unauthorized') {
        forceToken = true; // retry at once with a token fresh from the backend
        continue;
      }
      forceToken = false;
      // After a connection that had opened, start the backoff afresh; otherwise double it each time.
      failures = outcome === 'dropped' ? 0 : failures + 1;
      const base = Math.min(this.#options.maxRetryMs, this.#retryMs * 2 ** Math.max(0, failures - 1));
      // reconnect() asks for no wait, whether it came during the connection or the pause.
      if (!this.#immediate) await this.#pause(Math.round(base / 2 + Math.random() * (base / 2)));
      this.#immediate = false;
    }
    if (!this.#closed) {
      this.#closed = true;
      this.#setState('closed');
    }
  }

  #pause(ms) {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }

  async #connectOnce(forceToken) {
    const hooks = this.#client[internal];
    const abort = new AbortController();
    this.#abort = abort;
    const token = await hooks.token(forceToken);
    const headers = { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' };
    if (this.#lastEventId) headers['Last-Event-ID'] = this.#lastEventId;
    const response = await hooks.fetch(`${this.#client.url}${hooks.contactPath()}/stream`, { headers, cache: 'no-store', signal: abort.signal });
    if (response.status === 401) {
      await response.body?.cancel();
      return forceToken ? 'failed' : 'unauthorized';
    }
    if (!response.ok) {
      const error = new HeraldError(response.status, await response.json().catch(() => null));
      this.#emit('onError', error);
      // A 403/404 will not heal by retrying (wrong credential kind, unknown contact).
      return response.status === 403 || response.status === 404 ? 'fatal' : 'failed';
    }
    if (!response.body) throw new Error('The stream response has no body');
    this.#setState('open');
    this.#retryMs = this.#options.minRetryMs;
    void this.#refreshCounts();
    // Herald ends the stream when its token expires: have the next token ready by then, so the
    // reconnect needs no round trip to the backend.
    clearTimeout(this.#renewTimer);
    this.#renewTimer = setTimeout(() => {
      if (!this.#closed) hooks.token(false).catch((error) => this.#emit('onError', error));
    }, hooks.renewalDueInMs());

    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const parse = createSseParser((message) => this.#dispatch(message));
    let idle = setTimeout(() => abort.abort(), this.#options.idleTimeoutMs);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        clearTimeout(idle);
        idle = setTimeout(() => abort.abort(), this.#options.idleTimeoutMs);
        parse(value);
      }
    } catch {
      // The connection broke (network, server restart) or went idle: reconnect and replay.
      if (this.#closed) return 'closed';
    } finally {
      clearTimeout(idle);
    }
    return 'dropped';
  }

  #dispatch(message) {
    if (message.id != null) this.#lastEventId = message.id;
    if (message.retry != null) this.#retryMs = Math.max(this.#options.minRetryMs, message.retry);
    if (message.data == null) return;
    let payload;
    try {
      payload = JSON.parse(message.data);
    } catch {
      return; // not ours: ignore rather than break the stream
    }
    switch (message.event) {
      case 'counts':
        this.#setCounts(payload);
        break;
      case 'notification':
        this.#emit('onNotification', payload.item ?? payload);
        this.#countsFollowUp(payload);
        break;
      case 'updated':
        this.#emit('onUpdated', payload.item ?? payload);
        this.#countsFollowUp(payload);
        break;
      default:
        this.#emit('onMessage', { event: message.event, data: payload });
    }
  }

  #setCounts(payload) {
    const unread = typeof payload.unread_count === 'number' ? payload.unread_count : payload.unread;
    if (typeof unread !== 'number') return;
    this.#countsVersion += 1;
    clearTimeout(this.#countsTimer);
    const counts = { ...payload, unread };
    this.#counts = counts;
    this.#emit('onCounts', counts);
  }

  // A change may come with its counts (a counts event, or unread_count in the payload). If none
  // arrives shortly, ask the server rather than guessing: the badge must equal the server's count.
  #countsFollowUp(payload) {
    if (typeof payload.unread_count === 'number') return this.#setCounts({ unread_count: payload.unread_count });
    const version = this.#countsVersion;
    clearTimeout(this.#countsTimer);
    this.#countsTimer = setTimeout(() => {
      if (this.#countsVersion === version) void this.#refreshCounts();
    }, 300);
  }

  async #refreshCounts() {
    const version = this.#countsVersion;
    try {
      const counts = await this.#client.getCounts();
      // A counts event that arrived meanwhile is at least as fresh as this answer.
      if (!this.#closed && this.#countsVersion === version) this.#setCounts({ unread: counts.unread });
    } catch (error) {
      if (!this.#closed) this.#emit('onError', error);
    }
  }

  #setState(state) {
    if (this.#state === state) return;
    this.#state = state;
    this.#emit('onStateChange', state);
  }

  #emit(name, value) {
    const handler = this.#handlers[name];
    if (typeof handler !== 'function') return;
    try {
      handler(value);
    } catch (error) {
      console.error('herald: a stream handler threw', error);
    }
  }
}

/**
 * A Server-Sent Events parser (the WHATWG event-stream format): feed it text chunks; it calls
 * onMessage({ event, data, id, retry }) per dispatched event. Comments (heartbeats) are skipped.
 */
export function createSseParser(onMessage) {
  let buffer = '';
  let data = [];
  let event = '';
  let id = null;
  let retry = null;
  let sawId = false;
  const line = (text) => {
    if (text === '') {
      if (data.length > 0 || sawId || retry != null) {
        onMessage({ event: event || 'message', data: data.length > 0 ? data.join('\n') : null, id: sawId ? id : null, retry });
      }
      data = [];
      event = '';
      sawId = false;
      retry = null;
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) {
      id = value;
      sawId = true;
    } else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
  };
  return (chunk) => {
    buffer += chunk;
    for (;;) {
      const cr = buffer.indexOf('\r');
      const lf = buffer.indexOf('\n');
      if (cr === -1 && lf === -1) break;
      let end = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf);
      if (buffer[end] === '\r') {
        if (end === buffer.length - 1) break; // a \r\n may be split across chunks: wait for more
        line(buffer.slice(0, end));
        buffer = buffer.slice(buffer[end + 1] === '\n' ? end + 2 : end + 1);
      } else {
        line(buffer.slice(0, end));
        buffer = buffer.slice(end + 1);
      }
    }
  };
}

/** Decodes the base64url VAPID key into the bytes pushManager.subscribe expects. */
export function base64UrlToBytes(value) {
  const base64 = value.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (value.length % 4)) % 4);
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function sameKey(current, wanted) {
  if (!current) return false;
  const a = new Uint8Array(current);
  if (a.length !== wanted.length) return false;
  return a.every((byte, i) => byte === wanted[i]);
}

function subscriptionBody(subscription) {
  const json = subscription.toJSON();
  return { endpoint: json.endpoint, keys: { p256dh: json.keys.p256dh, auth: json.keys.auth } };
}

/** Accepts the mint response ({ token, expires_in, contact_id }) or a bare token string. */
function normaliseToken(issued) {
  const token = typeof issued === 'string' ? issued : issued && (issued.token ?? issued.access_token);
  if (typeof token !== 'string' || token === '') throw new TypeError('getToken must resolve to a contact token or { token, expires_in, contact_id }');
  const claims = decodeClaims(token);
  const contactId = (typeof issued === 'object' && issued.contact_id) || (claims && claims.sub);
  if (!contactId) throw new TypeError('getToken: cannot tell the contact id (pass contact_id along with the token)');
  let expiresIn = typeof issued === 'object' && typeof issued.expires_in === 'number' ? issued.expires_in : null;
  if (expiresIn == null && claims && typeof claims.exp === 'number' && typeof claims.iat === 'number') expiresIn = claims.exp - claims.iat;
  return { token, contactId, expiresIn: expiresIn ?? 300 };
}

/** Reads a JWT's claims without verifying them (Herald verifies; the client only needs sub and lifetime). */
function decodeClaims(token) {
  const part = token.split('.')[1];
  if (!part) return null;
  try {
    const bytes = base64UrlToBytes(part);
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}

function sortPreferences(result) {
  if (!result || !Array.isArray(result.preferences)) return result;
  const rank = (channel) => {
    const index = CHANNEL_ORDER.indexOf(channel);
    return index === -1 ? CHANNEL_ORDER.length : index;
  };
  const preferences = [...result.preferences].sort((a, b) => (a.type === b.type ? rank(a.channel) - rank(b.channel) : a.type < b.type ? -1 : 1));
  return { ...result, preferences };
}

function retryAfterMs(header) {
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, 30) * 1000 : 1000;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

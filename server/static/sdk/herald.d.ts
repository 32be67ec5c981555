// Types of Herald's browser client, served at /sdk/herald.d.ts next to /sdk/herald.js.
// Use: `import type { HeraldClient } from './herald'` after saving this file next to your code, or
// declare the module for the URL you import from.

export type Channel = 'inbox' | 'email' | 'push' | 'web_push' | 'sms' | 'chat' | 'http';

/** What your backend's token endpoint answers: POST /v1/contacts/tokens's response, passed through. */
export interface ContactTokenResponse {
  token: string;
  token_type?: string;
  /** Seconds until the token expires; the client asks for a new one shortly before. */
  expires_in: number;
  contact_id: string;
}

export interface HeraldOptions {
  /** Herald's base URL, e.g. https://herald.example.com */
  url: string;
  /**
   * Fetches a contact token from your own backend (which mints it with its service key). Called on
   * first use, shortly before the token expires, and after a 401. A bare token string also works
   * (its lifetime and contact are then read from the token).
   */
  getToken: () => Promise<ContactTokenResponse | string> | ContactTokenResponse | string;
  /** A fetch implementation (defaults to the global fetch). */
  fetch?: typeof fetch;
  /** The clock, in milliseconds (defaults to Date.now). */
  now?: () => number;
}

export interface InboxItem {
  id: string;
  event_id: string | null;
  type: string;
  title: string;
  body: string;
  action_url: string | null;
  data: Record<string, unknown>;
  created_at: string;
  seen_at: string | null;
  read_at: string | null;
  archived_at: string | null;
}

export interface InboxPage {
  items: InboxItem[];
  /** Pass back as `cursor` for the next page; null on the last page. */
  next_cursor: string | null;
  unread_count: number;
}

export interface ListOptions {
  limit?: number;
  cursor?: string;
  status?: 'all' | 'unread' | 'read';
  archived?: boolean;
}

export interface Counts {
  unread: number;
  /** As the server sends it (stream counts events): unread_count, unseen_count. */
  [extra: string]: unknown;
}

export interface Preference {
  type: string;
  channel: Channel;
  enabled: boolean;
  source: 'default' | 'contact';
  /** The type's opt-out policy: false means the type is mandatory (the choice cannot be changed). */
  opt_out?: boolean;
}

export interface PreferenceMatrix {
  preferences: Preference[];
}

export interface PushSubscriptionRecord {
  id: string;
  [field: string]: unknown;
}

export type StreamState = 'idle' | 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface StreamHandlers {
  /** A new inbox item arrived. */
  onNotification?: (item: InboxItem) => void;
  /** An item changed (read, seen, archived), possibly in another tab or device. */
  onUpdated?: (change: Partial<InboxItem> & Record<string, unknown>) => void;
  /** The server's counts: after every (re)connect and after each change. */
  onCounts?: (counts: Counts) => void;
  onStateChange?: (state: StreamState) => void;
  onError?: (error: unknown) => void;
  /** Events of other kinds (forward compatibility). */
  onMessage?: (message: { event: string; data: unknown }) => void;
}

export interface StreamOptions {
  /** First reconnect delay in ms (doubles per failed attempt, with jitter). Default 1000. */
  minRetryMs?: number;
  /** Largest reconnect delay in ms. Default 30000. */
  maxRetryMs?: number;
  /** Reconnect when nothing (not even a heartbeat) arrived for this long. Default 45000. */
  idleTimeoutMs?: number;
  /** Resume after this event id (Last-Event-ID). */
  lastEventId?: string;
}

/** An error answer from Herald. */
export declare class HeraldError extends Error {
  readonly status: number;
  /** ErrorResponse.code, 'validation_error' for 422, else 'http_error'. */
  readonly code: string;
  readonly body: unknown;
  constructor(status: number, body: unknown);
}

export declare class HeraldStream {
  readonly state: StreamState;
  readonly lastEventId: string | null;
  readonly counts: Counts | null;
  start(): void;
  /** Drops the connection and reconnects at once. */
  reconnect(): void;
  close(): void;
}

export declare class HeraldClient {
  constructor(options: HeraldOptions);
  readonly url: string;
  /** Known after the first request. */
  readonly contactId: string | null;
  token(): Promise<string>;
  listNotifications(options?: ListOptions): Promise<InboxPage>;
  getCounts(): Promise<Counts>;
  updateNotification(id: string, changes: { read?: boolean; seen?: boolean; archived?: boolean }): Promise<InboxItem>;
  markRead(id: string): Promise<InboxItem>;
  markUnread(id: string): Promise<InboxItem>;
  markSeen(id: string): Promise<InboxItem>;
  archive(id: string): Promise<InboxItem>;
  unarchive(id: string): Promise<InboxItem>;
  markAllRead(): Promise<{ updated: number }>;
  getPreferences(): Promise<PreferenceMatrix>;
  setPreference(type: string, channel: Channel, enabled: boolean): Promise<PreferenceMatrix>;
  setLanguage(language: string): Promise<Record<string, unknown>>;
  getWebPushPublicKey(): Promise<string>;
  /** Subscribes with pushManager (userVisibleOnly, the tenant's VAPID key) and registers with Herald. */
  registerWebPush(registration: ServiceWorkerRegistration): Promise<PushSubscriptionRecord>;
  /** Removes the subscription from Herald and the push service; false when there was none. */
  unregisterWebPush(registration: ServiceWorkerRegistration): Promise<boolean>;
  connect(handlers?: StreamHandlers, options?: StreamOptions): HeraldStream;
}

export declare function createHerald(options: HeraldOptions): HeraldClient;

export interface SseMessage {
  event: string;
  data: string | null;
  id: string | null;
  retry: number | null;
}

export declare function createSseParser(onMessage: (message: SseMessage) => void): (chunk: string) => void;

export declare function base64UrlToBytes(value: string): Uint8Array;

/** <herald-inbox>, defined by /sdk/herald-inbox.js. */
export interface HeraldInboxElement extends HTMLElement {
  client: HeraldClient | null;
  readonly unreadCount: number | null;
  open(): Promise<void>;
  close(restoreFocus?: boolean): void;
  markAllRead(): Promise<void>;
}

export interface HeraldInboxEventMap {
  'herald-notification': CustomEvent<InboxItem>;
  'herald-counts': CustomEvent<Counts>;
  'herald-state': CustomEvent<StreamState>;
  'herald-error': CustomEvent<unknown>;
}

declare global {
  interface HTMLElementTagNameMap {
    'herald-inbox': HeraldInboxElement;
  }
}

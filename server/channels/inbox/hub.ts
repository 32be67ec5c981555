// The read side of the real-time stream, one per HTTP-serving process: ONE dedicated PostgreSQL
// connection LISTENs on STREAM_CHANNEL; a notice names contacts, and if one of them has open
// streams here, the hub re-reads the contact's stream log (log.ts) after the oldest id its streams
// have seen and pushes each event to the streams that have not seen it. Reading "id > last seen"
// instead of trusting the notice makes it loss-free: a missed notice (reconnect) or a new stream
// (replay from Last-Event-ID) is served by the same read. Appends are serialised per contact until
// commit (see events.ts), so a contact's ids become visible in increasing order and none is skipped.
// Counts are derived here, not stored per change: after a read that sent a stream a notification or
// an update (or that started the stream), the hub reads the contact's counts and sends them. Most
// contacts have no stream open when an item is delivered, so storing counts per change would cost
// every delivery a count query and a stream row for nobody to read.
// The same connection also hears service-key changes, for the process's key cache
// (server/base/auth/service-key-cache.ts), which it enables only while it is listening.
import pg from 'pg';
import type { Context } from '../../base/context.ts';
import { inboxCounts } from './inbox-items.ts';
import { API_KEYS_CHANNEL } from '../../base/auth/service-key-cache.ts';
import { STREAM_CHANNEL, type StreamNotice } from './events.ts';
import { lastStreamIdDrawn, readStreamLog, streamLogEnd, type StreamMessage } from './log.ts';
import { isDatabaseUnavailable } from '../../base/db/availability.ts';

/** What the hub needs from one open stream (see sse.ts). */
export interface StreamSink {
  send(message: StreamMessage): void;
  comment(text: string): void;
  close(): void;
}

interface Subscription {
  contactId: string;
  /** The last stream id this stream has been sent (or chose to start after). */
  lastId: bigint;
  /** Until the first read: the Last-Event-ID to replay after, or null to start at the current end. */
  pending: { from: bigint | null } | null;
  sink: StreamSink;
}

interface ContactStreams {
  subscriptions: Set<Subscription>;
  dirty: boolean;
  draining: boolean;
}

const PAGE = 500;
/** Open streams per contact on one process: enough for many tabs and devices, not for a flood. */
export const MAX_STREAMS_PER_CONTACT = 16;
const MAX_BACKOFF_MS = 10_000;
const LISTEN_CHANNELS = `LISTEN ${STREAM_CHANNEL}; LISTEN ${API_KEYS_CHANNEL}`;

export class StreamHub {
  readonly #runtime: Context;
  readonly #contacts = new Map<string, ContactStreams>();
  #client: pg.Client | null = null;
  #stopping = false;
  #closed = false;
  #attempt = 0;
  #reconnectTimer: NodeJS.Timeout | null = null;
  #heartbeat: NodeJS.Timeout;

  constructor(runtime: Context) {
    this.#runtime = runtime;
    this.#heartbeat = setInterval(() => this.#beat(), runtime.config.streamHeartbeatMs);
    this.#heartbeat.unref();
  }

  /** Open streams on this process (for tests and status). */
  get size(): number {
    let n = 0;
    for (const c of this.#contacts.values()) n += c.subscriptions.size;
    return n;
  }

  /** Open streams of one contact on this process. */
  streamsOf(contactId: string): number {
    return this.#contacts.get(contactId)?.subscriptions.size ?? 0;
  }

  /** false once streams were closed for shutdown: new streams are refused. */
  get accepting(): boolean {
    return !this.#closed;
  }

  async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#runtime.db.url, application_name: 'herald-stream' });
    client.on('notification', (message) => {
      if (message.channel === API_KEYS_CHANNEL && message.payload)
        return this.#runtime.serviceKeys.evict(message.payload);
      if (message.channel !== STREAM_CHANNEL || !message.payload) return;
      try {
        const notice = JSON.parse(message.payload) as StreamNotice;
        for (const contactId of notice.contacts) this.#wake(contactId);
      } catch {
        this.#runtime.logger.warn('stream notice unreadable');
      }
    });
    const lost = (error?: unknown) => {
      if (this.#client !== client) return;
      this.#client = null;
      this.#runtime.serviceKeys.setListening(false);
      client.end().catch(() => undefined);
      if (this.#stopping) return;
      this.#runtime.logger.warn('stream listener lost; reconnecting', {
        error: error instanceof Error ? error.message : undefined,
      });
      this.#scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    await client.connect();
    await client.query(LISTEN_CHANNELS);
    // A reconnect that ends after the stop began would keep a connection (and the process) open.
    if (this.#stopping) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#runtime.serviceKeys.setListening(true);
    this.#attempt = 0;
  }

  #scheduleReconnect(): void {
    const delay = Math.min(MAX_BACKOFF_MS, 100 * 2 ** this.#attempt) * (0.5 + Math.random() / 2);
    this.#attempt++;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = null;
      this.connect().then(
        () => {
          if (this.#stopping) return;
          this.#runtime.logger.info('stream listener reconnected');
          // Notices sent while we were away are gone: every contact re-reads from its last id.
          for (const contactId of this.#contacts.keys()) this.#wake(contactId);
        },
        (error: unknown) => {
          if (this.#stopping) return;
          // During a database outage every attempt fails: that is the outage, logged once, not a line per attempt.
          if (isDatabaseUnavailable(error)) this.#runtime.availability.markDown(error);
          else this.#runtime.logger.warn('stream listener reconnect failed', { error: (error as Error).message });
          this.#scheduleReconnect();
        },
      );
    }, delay);
    this.#reconnectTimer.unref();
  }

  /**
   * Registers an open stream. With `lastEventId` it first replays what followed that id; without it,
   * it starts at the current end. Either way it then receives a 'counts' event, then live events.
   */
  subscribe(contactId: string, lastEventId: bigint | null, sink: StreamSink): () => void {
    const subscription: Subscription = { contactId, lastId: 0n, pending: { from: lastEventId }, sink };
    let streams = this.#contacts.get(contactId);
    if (!streams) {
      streams = { subscriptions: new Set(), dirty: false, draining: false };
      this.#contacts.set(contactId, streams);
    }
    streams.subscriptions.add(subscription);
    this.#wake(contactId);
    return () => this.#unsubscribe(subscription);
  }

  #unsubscribe(subscription: Subscription): void {
    const streams = this.#contacts.get(subscription.contactId);
    if (!streams) return;
    streams.subscriptions.delete(subscription);
    if (streams.subscriptions.size === 0 && !streams.draining) this.#contacts.delete(subscription.contactId);
  }

  #wake(contactId: string): void {
    const streams = this.#contacts.get(contactId);
    if (!streams) return;
    streams.dirty = true;
    if (streams.draining) return;
    streams.draining = true;
    void this.#drain(contactId, streams);
  }

  /** One drain at a time per contact; notices arriving meanwhile make it read again. */
  async #drain(contactId: string, streams: ContactStreams): Promise<void> {
    const em = this.#runtime.orm.em.fork();
    try {
      while (streams.dirty && streams.subscriptions.size > 0) {
        streams.dirty = false;
        const starting = [...streams.subscriptions].filter((s) => s.pending);
        if (starting.some((s) => s.pending!.from === null)) {
          const end = await streamLogEnd(em, contactId);
          for (const s of starting) if (s.pending!.from === null) s.pending!.from = end;
        }
        if (starting.some((s) => s.pending!.from !== null)) {
          // A Last-Event-ID beyond the sequence (a restored database) would hide new events: clamp it.
          const last = await lastStreamIdDrawn(em);
          for (const s of starting) if (s.pending!.from! > last) s.pending!.from = last;
        }
        for (const s of starting) {
          s.lastId = s.pending!.from!;
          s.pending = null;
        }
        const subscriptions = [...streams.subscriptions].filter((s) => !s.pending);
        let after = subscriptions.reduce((min, s) => (s.lastId < min ? s.lastId : min), subscriptions[0]?.lastId ?? 0n);
        // Streams sent a change since the last counts they got (a stored counts row, from read-all, settles it).
        const owingCounts = new Set<Subscription>();
        for (;;) {
          const rows = await readStreamLog(em, contactId, after, PAGE);
          for (const row of rows) {
            const id = BigInt(row.id);
            for (const s of subscriptions) {
              if (id <= s.lastId) continue;
              s.sink.send(row);
              s.lastId = id;
              if (row.kind === 'counts') owingCounts.delete(s);
              else owingCounts.add(s);
            }
            after = id;
          }
          if (rows.length < PAGE) break;
        }
        // The current counts, to every stream sent a change and to every new stream once it has caught
        // up; their id is the last event the stream was sent, so a reconnect resumes after it.
        for (const s of starting) owingCounts.add(s);
        if (owingCounts.size > 0) {
          const counts = await inboxCounts(em, contactId);
          for (const s of owingCounts) {
            if (streams.subscriptions.has(s))
              s.sink.send({ id: s.lastId.toString(), kind: 'counts', payload: { ...counts } });
          }
        }
      }
    } catch (error) {
      if (!this.#stopping) {
        if (isDatabaseUnavailable(error)) this.#runtime.availability.markDown(error);
        else this.#runtime.logger.warn('stream read failed; retrying', { error: (error as Error).message });
        const retry = setTimeout(() => this.#wake(contactId), 1000);
        retry.unref();
      }
    } finally {
      streams.draining = false;
      if (streams.subscriptions.size === 0) {
        if (this.#contacts.get(contactId) === streams) this.#contacts.delete(contactId);
      } else if (streams.dirty) this.#wake(contactId);
    }
  }

  #beat(): void {
    for (const streams of this.#contacts.values()) for (const s of streams.subscriptions) s.sink.comment('heartbeat');
  }

  /** Ends every open stream (shutdown): clients reconnect, to another process, with Last-Event-ID. */
  closeStreams(): void {
    this.#closed = true;
    for (const streams of this.#contacts.values()) {
      for (const s of [...streams.subscriptions]) s.sink.close();
      streams.subscriptions.clear();
    }
    this.#contacts.clear();
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.closeStreams();
    clearInterval(this.#heartbeat);
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    const client = this.#client;
    this.#client = null;
    this.#runtime.serviceKeys.setListening(false);
    await client?.end().catch(() => undefined);
  }
}

/** Starts the process's hub and registers its stop with the runtime's cleanups. */
/** The context of a process that serves streams: its hub, once started (null in worker-only and one-shot runtimes). */
export interface StreamContext extends Context {
  streamHub: StreamHub | null;
}

export async function startStreamHub(runtime: StreamContext): Promise<StreamHub> {
  const hub = new StreamHub(runtime);
  await hub.connect();
  runtime.streamHub = hub;
  runtime.cleanups.push(function streamHub() {
    return hub.stop();
  });
  return hub;
}

// Sending email over SMTP: one set of pooled connections per distinct server+credentials (a
// transport), kept for reuse and closed on shutdown; each message is composed in one pass (mime.ts),
// signed with DKIM when asked, and sent as is (smtp-connections.ts). Used by system emails (the
// install's SMTP), tenant email transports and test sends alike. The pool is bounded: a transport
// idle for a while is closed, and so is the least recently used one beyond a cap, so that tenants
// changing their settings (each change is a new transport) or an install with many tenants cannot
// pile up open connections.
import { createHash } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import DKIM from 'nodemailer/lib/dkim';
import { checkedAddresses, type GuardOptions } from '../../base/net/public-address.ts';
import { composeMail } from './mime.ts';
import { SmtpServerConnections, type ServerReply } from './smtp-connections.ts';

export interface SmtpSettings {
  host: string;
  port: number;
  /**
   * Implicit TLS (smtps, usually 465). Otherwise STARTTLS: required when the transport authenticates,
   * used whenever the server offers it when it does not.
   */
  secure: boolean;
  username?: string | null;
  password?: string | null;
  /**
   * A server a tenant chose: its host goes through the SSRF guard as each connection opens, which
   * connects to the addresses it checked (NonPublicAddressError when none may be). The install's own
   * SMTP has none: it is trusted, and resolved as nodemailer does.
   */
  guard?: GuardOptions;
}

export interface DkimSigning {
  domainName: string;
  keySelector: string;
  privateKey: string;
}

export interface OutgoingMail {
  from: string;
  to: string | string[];
  subject: string;
  html?: string;
  text?: string;
  replyTo?: string;
  headers?: Record<string, string>;
  dkim?: DkimSigning;
  /** The SMTP envelope (MAIL FROM / RCPT TO) when it differs from the headers (VERP bounce addresses). */
  envelope?: { from: string; to: string | string[] };
}

export interface SentMail extends ServerReply {
  messageId: string;
}

/** smtp://user:pass@host:587 or smtps://user:pass@host:465 -> settings. */
export function smtpSettingsFromUrl(url: string): SmtpSettings {
  const u = new URL(url);
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:')
    throw new Error('SMTP URL must start with smtp:// or smtps://');
  const secure = u.protocol === 'smtps:';
  return {
    host: u.hostname,
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    username: u.username ? decodeURIComponent(u.username) : null,
    password: u.password ? decodeURIComponent(u.password) : null,
  };
}

interface PooledTransport {
  connections: SmtpServerConnections;
  lastUsed: number;
  /** Sends under way: a busy transport is never closed. */
  sending: number;
}

export interface SmtpPoolOptions {
  /** The certificate authorities trusted for the servers' TLS (net/trusted-cas.ts); Node's default store without it. */
  ca?: string[] | undefined;
  /** Open transports at most (default 100); beyond it the least recently used idle one is closed. */
  maxTransports?: number;
  /** Connections each transport keeps open at most (default 20). */
  maxConnections?: number;
  /** Messages a connection sends before it is renewed (default 1,000). */
  maxMessages?: number;
  /** A transport unused this long is closed (default 5 minutes). */
  idleMs?: number;
  now?: () => number;
}

export class SmtpPool {
  /** In order of last use, least recent first. */
  readonly #transports = new Map<string, PooledTransport>();
  /** Each settings object's transport id: a run sends its mails with one settings object per transport. */
  readonly #ids = new WeakMap<SmtpSettings, string>();
  readonly #tls: { rejectUnauthorized: true; ca?: string[] };
  readonly #maxTransports: number;
  readonly #maxConnections: number;
  readonly #maxMessages: number;
  readonly #idleMs: number;
  readonly #now: () => number;
  /** Sweeps idle transports while any is open, so that they close even when nothing is sent. */
  #sweeper: ReturnType<typeof setInterval> | null = null;

  constructor(options: SmtpPoolOptions = {}) {
    this.#tls = options.ca ? { rejectUnauthorized: true, ca: options.ca } : { rejectUnauthorized: true };
    this.#maxTransports = options.maxTransports ?? 100;
    this.#maxConnections = options.maxConnections ?? 20;
    this.#maxMessages = options.maxMessages ?? 1000;
    this.#idleMs = options.idleMs ?? 5 * 60_000;
    this.#now = options.now ?? Date.now;
  }

  /** Open transports (tests). */
  get size(): number {
    return this.#transports.size;
  }

  /** The transport for these settings, counted as sending (the caller's send) before anything is evicted. */
  #acquire(settings: SmtpSettings): PooledTransport {
    let id = this.#ids.get(settings);
    if (id === undefined) {
      id = createHash('sha256')
        // The guard is part of a transport's identity: a tenant naming the install's own relay (and its
        // credentials, if any) gets connections of its own, checked, not the install's.
        .update(
          JSON.stringify([
            settings.host,
            settings.port,
            settings.secure,
            settings.username,
            settings.password,
            settings.guard ?? null,
          ]),
        )
        .digest('hex');
      this.#ids.set(settings, id);
    }
    const now = this.#now();
    let pooled = this.#transports.get(id);
    if (pooled) {
      this.#transports.delete(id); // re-inserted below: most recently used last
      pooled.lastUsed = now;
    } else {
      const guard = settings.guard;
      pooled = {
        connections: new SmtpServerConnections({
          host: settings.host,
          port: settings.port,
          secure: settings.secure,
          // Credentials never cross the wire in clear: a transport that authenticates without implicit
          // TLS must upgrade with STARTTLS, and gives up (sending nothing) when the server does not
          // offer it, or when someone on the path strips the offer. A transport without credentials
          // (a relay on the local network) still upgrades whenever the server offers it.
          requireTLS: !settings.secure && Boolean(settings.username),
          auth: settings.username ? { user: settings.username, pass: settings.password ?? '' } : null,
          tls: this.#tls,
          // Each message takes two round trips on its connection (the pipelined envelope, then the
          // data), so a busy worker keeps several going: twenty by default, Postfix's default
          // concurrency per destination (smtpConnections lowers it for a relay that allows fewer at
          // once, which refuses the rest: those messages are retried). A connection is renewed after a
          // thousand messages (nodemailer's pool renews after a hundred), as each renewal is a new
          // handshake.
          maxConnections: this.#maxConnections,
          maxMessages: this.#maxMessages,
          ...(guard ? { resolve: (host: string) => checkedAddresses(host, guard) } : {}),
        }),
        lastUsed: now,
        sending: 0,
      };
    }
    pooled.sending++;
    this.#transports.set(id, pooled);
    this.#evict(now);
    this.#sweeper ??= setInterval(() => this.#sweep(), this.#idleMs).unref();
    return pooled;
  }

  #sweep(): void {
    this.#evict(this.#now());
    if (this.#transports.size === 0 && this.#sweeper) {
      clearInterval(this.#sweeper);
      this.#sweeper = null;
    }
  }

  /** Closes the transports unused for idleMs, then the least recently used beyond the cap; never a busy one. */
  #evict(now: number): void {
    let over = this.#transports.size - this.#maxTransports;
    for (const [id, pooled] of this.#transports) {
      const stale = now - pooled.lastUsed >= this.#idleMs;
      if (!stale && over <= 0) break; // the rest were used more recently
      if (pooled.sending > 0) continue;
      pooled.connections.close();
      this.#transports.delete(id);
      over--;
    }
  }

  async send(settings: SmtpSettings, mail: OutgoingMail): Promise<SentMail> {
    const composed = composeMail(mail);
    const message = mail.dkim ? await buffer(new DKIM(mail.dkim).sign(composed.message)) : composed.message;
    const pooled = this.#acquire(settings);
    try {
      const reply = await pooled.connections.send(composed.envelope, message);
      return { messageId: composed.messageId, ...reply };
    } finally {
      pooled.sending--;
    }
  }

  close(): void {
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = null;
    for (const { connections } of this.#transports.values()) connections.close();
    this.#transports.clear();
  }
}

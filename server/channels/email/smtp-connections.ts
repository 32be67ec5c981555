// The connections kept to one SMTP server with one set of credentials: nodemailer's SMTPConnection,
// without its Mailer and SMTPPool layers, which stream each message through a chain of streams of
// their own and cost more per message than the SMTP exchange itself. Connections are opened as sends
// need them, up to maxConnections, and each is reused for the next send once its exchange is over;
// sends beyond that wait their turn. A connection is renewed after maxMessages, kept after a message
// the server refused (reset with RSET), and dropped when it fails, times out idle or the server ends it.
// A server given `resolve` (a tenant's, through the SSRF guard) is resolved as each connection opens,
// and that connection goes to the addresses the guard checked: nodemailer gets the socket already
// connected, and still verifies the server's certificate against the host name (and sends it as SNI).
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { LookupAddress } from 'node:dns';
import { connect as netConnect, type Socket } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { Readable } from 'node:stream';

export interface ServerConnectionOptions {
  host: string;
  port: number;
  /** Implicit TLS; otherwise STARTTLS whenever the server offers it. */
  secure: boolean;
  /** Refuse to go on (and so to send credentials) without STARTTLS. */
  requireTLS: boolean;
  auth: { user: string; pass: string } | null;
  tls: ConnectionOptions;
  maxConnections: number;
  /** Messages a connection sends before it is renewed. */
  maxMessages: number;
  /**
   * The addresses a new connection to `host` may go to, asked as each one opens (resolved once, and
   * so again whenever a connection is renewed); without it nodemailer resolves the host itself.
   */
  resolve?: (host: string) => Promise<LookupAddress[]>;
}

export interface SmtpEnvelope {
  /** MAIL FROM; false for the null sender. */
  from: string | false;
  to: string[];
}

export interface ServerReply {
  accepted: string[];
  rejected: string[];
  response: string;
}

interface Connection {
  smtp: SMTPConnection;
  /** Messages sent over it so far. */
  messages: number;
}

interface Waiter {
  resolve: (connection: Connection) => void;
  reject: (error: unknown) => void;
}

const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

/** nodemailer's codes for a connection that broke (not a refusal by the server). */
const BROKEN_CONNECTION = new Set(['ECONNECTION', 'ESOCKET', 'ETIMEDOUT']);

/** OpenSSL's verdicts on a server's certificate that trusting a private CA (providers.caFile) answers. */
const UNTRUSTED_CERTIFICATE = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

/**
 * A TLS handshake that fails (STARTTLS, or implicit TLS) says so with the server it was with: Node's
 * message ("certificate has expired") names neither, and a delivery's error is all an operator sees.
 * A certificate Herald does not accept also names the setting that trusts a development relay's CA,
 * in place of Node's advice about its own flags. The error keeps its codes (retried as before).
 */
function describeTlsFailure(error: unknown, options: ServerConnectionOptions): unknown {
  if (typeof error !== 'object' || error === null) return error;
  const e = error as { code?: string; originalCode?: string; message?: string };
  const code = e.originalCode ?? e.code ?? '';
  const certificate = UNTRUSTED_CERTIFICATE.has(code);
  if (!certificate && !/^ERR_(SSL|TLS)_/.test(code)) return error;
  const reason = String(e.message ?? error).replace(/; if the root CA is installed locally, .*$/, '');
  const server = `${options.host.includes(':') ? `[${options.host}]` : options.host}:${options.port}`;
  const hint = certificate ? ' (trust a private CA with providers.caFile)' : '';
  e.message = `${options.secure ? 'TLS' : 'STARTTLS'} with ${server} failed: ${reason}${hint}`;
  return error;
}

export class SmtpServerConnections {
  readonly #options: ServerConnectionOptions;
  /** Every connection open or opening. */
  readonly #connections = new Set<Connection>();
  /** Open connections with nothing under way, the most recently used last. */
  readonly #idle: Connection[] = [];
  readonly #waiting: Waiter[] = [];
  /** Connections whose socket is being connected to the resolved addresses, not yet in #connections. */
  #connecting = 0;
  #closed = false;

  constructor(options: ServerConnectionOptions) {
    this.#options = options;
  }

  async send(envelope: SmtpEnvelope, message: Buffer): Promise<ServerReply> {
    // A server may end a connection that sat idle just as a send starts on it: when that send fails
    // before any of the message went out, it goes out once more on another connection.
    for (let attempt = 1; ; attempt++) {
      const connection = await this.#acquire();
      const reused = connection.messages > 0;
      const body = new MessageBody(message);
      try {
        const reply = await new Promise<ServerReply>((resolve, reject) => {
          connection.smtp.send(envelope, body, (error, sent) =>
            error
              ? reject(error)
              : resolve({ accepted: sent!.accepted, rejected: sent!.rejected, response: sent!.response }),
          );
        });
        connection.messages++;
        this.#release(connection);
        return reply;
      } catch (error) {
        await this.#afterFailure(connection, error);
        if (
          attempt === 1 &&
          reused &&
          !body.readableDidRead &&
          BROKEN_CONNECTION.has((error as { code?: string }).code ?? '')
        )
          continue;
        throw error;
      }
    }
  }

  /** Closes every connection; sends still waiting for one fail. */
  close(): void {
    this.#closed = true;
    for (const waiter of this.#waiting.splice(0)) waiter.reject(new Error('The SMTP connections were closed'));
    for (const connection of this.#connections) connection.smtp.close();
    this.#connections.clear();
    this.#idle.length = 0;
  }

  #acquire(): Promise<Connection> {
    if (this.#closed) return Promise.reject(new Error('The SMTP connections were closed'));
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      this.#serveWaiting();
    });
  }

  /** Hands idle connections to waiting sends, and opens new ones for them while under the cap. */
  #serveWaiting(): void {
    while (this.#waiting.length > 0 && !this.#closed) {
      const idle = this.#idle.pop();
      if (idle) {
        this.#waiting.shift()!.resolve(idle);
        continue;
      }
      if (this.#connections.size + this.#connecting >= this.#options.maxConnections) return;
      const waiter = this.#waiting.shift()!;
      this.#open().then(waiter.resolve, waiter.reject);
    }
  }

  /** Opens a connection (counted from now), greeted, upgraded to TLS where it can be and logged in. */
  async #open(): Promise<Connection> {
    const { host, port, secure, requireTLS, tls, auth } = this.#options;
    const socket = this.#options.resolve ? await this.#connectResolved(this.#options.resolve) : undefined;
    const smtp = new SMTPConnection({
      host,
      port,
      secure,
      requireTLS,
      tls,
      ...TIMEOUTS,
      ...(socket ? { connection: socket } : {}),
    });
    const connection: Connection = { smtp, messages: 0 };
    this.#connections.add(connection);
    // Errors reach the connect or send under way; one on an idle connection ends it, as 'end' tells.
    smtp.on('error', () => {});
    smtp.once('end', () => this.#forget(connection));
    try {
      await new Promise<void>((resolve, reject) => {
        const closed = () => reject(new Error('The SMTP connection closed while opening'));
        const settle = (error?: unknown) => {
          smtp.off('error', settle);
          smtp.off('end', closed);
          if (error) reject(error);
          else resolve();
        };
        smtp.once('error', settle);
        smtp.once('end', closed);
        smtp.connect((error) => {
          if (error) return settle(error);
          // As nodemailer's own pool: credentials go only to a server that offers AUTH.
          if (!auth || !smtp.allowsAuth) return settle();
          smtp.login({ credentials: auth }, (loginError) => settle(loginError ?? undefined));
        });
      });
    } catch (error) {
      smtp.close();
      this.#forget(connection);
      throw describeTlsFailure(error, this.#options);
    }
    return connection;
  }

  /**
   * A TCP connection to one of the addresses `resolve` answers for the host (both families tried in
   * turn, as Node does), counted against maxConnections while it opens; within connectionTimeout.
   */
  async #connectResolved(resolve: (host: string) => Promise<LookupAddress[]>): Promise<Socket> {
    const { host, port } = this.#options;
    this.#connecting++;
    let socket: Socket;
    try {
      socket = await connectToAddresses(resolve, host, port, TIMEOUTS.connectionTimeout);
    } catch (error) {
      this.#connecting--;
      this.#serveWaiting();
      throw error;
    }
    this.#connecting--;
    if (this.#closed) {
      socket.destroy();
      throw new Error('The SMTP connections were closed');
    }
    return socket;
  }

  #release(connection: Connection): void {
    if (this.#closed || connection.smtp.destroyed) return;
    if (connection.messages >= this.#options.maxMessages) {
      connection.smtp.quit(); // its 'end' makes room for a new one
      return;
    }
    this.#idle.push(connection);
    this.#serveWaiting();
  }

  /**
   * A refused message leaves the session usable once reset (done before the refusal is reported, so
   * that the next send finds the connection free); any other failure ends the connection.
   */
  async #afterFailure(connection: Connection, error: unknown): Promise<void> {
    const { code, responseCode } = error as { code?: string; responseCode?: number };
    if ((code === 'EENVELOPE' || code === 'EMESSAGE') && responseCode !== 421 && !connection.smtp.destroyed) {
      const reset = await new Promise<boolean>((resolve) =>
        connection.smtp.reset((resetError) => resolve(!resetError)),
      );
      if (reset) return this.#release(connection);
    }
    connection.smtp.close();
  }

  /** A connection that ended (or never opened) makes room for a waiting send. */
  #forget(connection: Connection): void {
    if (!this.#connections.delete(connection)) return;
    const idleAt = this.#idle.indexOf(connection);
    if (idleAt >= 0) this.#idle.splice(idleAt, 1);
    this.#serveWaiting();
  }
}

/**
 * Resolves the host once and connects to what that answered: the socket's lookup hands Node those
 * addresses, so the name is not looked up again. Several addresses share the time left, as each
 * attempt only moves on to the next one when it fails or its share runs out.
 */
async function connectToAddresses(
  resolve: (host: string) => Promise<LookupAddress[]>,
  host: string,
  port: number,
  timeoutMs: number,
): Promise<Socket> {
  const deadline = Date.now() + timeoutMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error(`Connection to ${host}:${port} timed out`), { code: 'ETIMEDOUT' })),
      timeoutMs,
    );
  });
  let socket: Socket | undefined;
  try {
    const addresses = await Promise.race([resolve(host), timedOut]);
    const families = new Set(addresses.map((a) => a.family));
    socket = netConnect({
      host,
      port,
      autoSelectFamily: addresses.length > 1,
      ...(addresses.length > 1 && families.size === 1
        ? { autoSelectFamilyAttemptTimeout: Math.max(Math.floor((deadline - Date.now()) / addresses.length), 10) }
        : {}),
      lookup: (_name, options, callback) => {
        if (options.all) return callback(null, addresses);
        callback(null, addresses[0]!.address, addresses[0]!.family);
      },
    });
    const opening = socket;
    let failed: (error: Error) => void = () => {};
    try {
      await Promise.race([
        new Promise<void>((resolveConnect, rejectConnect) => {
          failed = rejectConnect;
          opening.once('connect', resolveConnect);
          opening.once('error', failed);
        }),
        timedOut,
      ]);
    } finally {
      opening.off('error', failed); // nodemailer's own handlers take over
    }
    return opening;
  } catch (error) {
    socket?.destroy();
    // Node reports every address failing as an AggregateError without a message of its own.
    if (error instanceof AggregateError && !error.message)
      error.message = error.errors.map((e: unknown) => (e as Error).message).join('; ');
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** The message as one chunk; `readableDidRead` tells whether the server took DATA and any of it went out. */
class MessageBody extends Readable {
  #bytes: Buffer | null;

  constructor(bytes: Buffer) {
    super();
    this.#bytes = bytes;
  }

  override _read(): void {
    this.push(this.#bytes);
    this.#bytes = null;
    this.push(null);
  }
}

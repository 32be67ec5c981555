// A real SMTP server (smtp-server) that keeps every message it accepts, parsed with mailparser, so
// tests read Herald's emails the way a mailbox would.
import { SMTPServer } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';
import type { AddressInfo, Socket } from 'node:net';
import { testCertificate } from './tls.ts';

export interface ReceivedMail {
  envelope: { from: string; to: string[] };
  raw: string;
  parsed: ParsedMail;
  /** Auth user the client logged in as, if any. */
  user?: string;
  /** Whether the message came over TLS (STARTTLS, or implicit TLS). */
  secure: boolean;
  /** The server name the client asked for in its TLS handshake (SNI), if any. */
  servername?: string;
}

export interface SmtpPeer {
  host: string;
  port: number;
  /** smtp://[user:pass@]127.0.0.1:port (smtps:// with implicit TLS) */
  url: string;
  messages: ReceivedMail[];
  /** AUTH commands received (credentials sent), whether or not they were right. */
  authAttempts: number;
  /** Client connections open right now. */
  openConnections: number;
  /** Client connections opened since the server started. */
  connectionsOpened: number;
  /** Closes every client connection from the server's side, as a server ending idle sessions does. */
  dropConnections(): void;
  /** Resolves with the first message (already received or arriving) that matches. */
  waitFor(predicate: (m: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

/**
 * `auth`: the credentials the server requires. `starttls`: offer STARTTLS with the test certificate
 * (trusted by the test apps through providers.caFile); on by default for a server that requires auth,
 * as Herald authenticates only over TLS. Plain-text AUTH is allowed all the same, so a test can see a
 * client send credentials in clear. `rejectRecipients` are refused for good (550), `deferRecipients`
 * (a set the test may change) for now (451). `holdRecipients`: an address is answered only once its
 * promise settles (a test may look at what Herald has stored meanwhile). `dropAfterData`: a message
 * to one of these addresses is received whole (and kept), then the connection is cut before the
 * server answers it, as when a connection breaks at the worst moment. `certificate`: what STARTTLS
 * presents instead of the test certificate (an expired or untrusted one).
 */
export async function startSmtpPeer(
  options: {
    auth?: { user: string; pass: string };
    rejectRecipients?: string[];
    deferRecipients?: Set<string>;
    holdRecipients?: Map<string, Promise<void>>;
    dropAfterData?: Set<string>;
    starttls?: boolean;
    /** The certificate STARTTLS (or implicit TLS) presents; the test certificate by default. */
    certificate?: { cert: string; key: string };
    implicitTls?: boolean;
  } = {},
): Promise<SmtpPeer> {
  const messages: ReceivedMail[] = [];
  const waiters: Array<{ predicate: (m: ReceivedMail) => boolean; resolve: (m: ReceivedMail) => void }> = [];
  const implicitTls = options.implicitTls ?? false;
  const starttls = !implicitTls && (options.starttls ?? Boolean(options.auth));
  const peer = { authAttempts: 0 };
  const sockets = new Set<Socket>();
  const { key, cert } = options.certificate ?? testCertificate();
  const server = new SMTPServer({
    secure: implicitTls,
    ...(starttls || implicitTls ? { key, cert } : {}),
    ...(starttls ? {} : { disabledCommands: ['STARTTLS'] }),
    authOptional: !options.auth,
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      peer.authAttempts++;
      if (options.auth && auth.username === options.auth.user && auth.password === options.auth.pass)
        return callback(null, { user: auth.username });
      return callback(new Error('Invalid username or password'));
    },
    async onRcptTo(address, _session, callback) {
      await options.holdRecipients?.get(address.address);
      if (options.rejectRecipients?.includes(address.address)) return callback(new Error('Mailbox unavailable'));
      if (options.deferRecipients?.has(address.address))
        return callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const parsed = await simpleParser(raw);
        const { servername } = session as { servername?: string }; // set by TLS, not in the types
        const mail: ReceivedMail = {
          envelope: {
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
          },
          raw,
          parsed,
          user: session.user as string | undefined,
          secure: session.secure,
          ...(servername ? { servername } : {}),
        };
        messages.push(mail);
        if (mail.envelope.to.some((to) => options.dropAfterData?.has(to))) {
          for (const socket of sockets) if (socket.remotePort === session.remotePort) socket.destroy();
          return;
        }
        for (const w of [...waiters]) {
          if (w.predicate(mail)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(mail);
          }
        }
        callback();
      });
    },
  });
  // A client that refuses the certificate hangs up mid-handshake: smtp-server reports that as an
  // 'error', which is part of what the test looks at, not a fault of the peer.
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  let openConnections = 0;
  let connectionsOpened = 0;
  server.server.on('connection', (socket: Socket) => {
    openConnections++;
    connectionsOpened++;
    sockets.add(socket);
    socket.on('close', () => {
      openConnections--;
      sockets.delete(socket);
    });
  });
  const auth = options.auth ? `${encodeURIComponent(options.auth.user)}:${encodeURIComponent(options.auth.pass)}@` : '';
  return {
    host: '127.0.0.1',
    port,
    url: `${implicitTls ? 'smtps' : 'smtp'}://${auth}127.0.0.1:${port}`,
    messages,
    get authAttempts() {
      return peer.authAttempts;
    },
    get openConnections() {
      return openConnections;
    },
    get connectionsOpened() {
      return connectionsOpened;
    },
    dropConnections() {
      for (const socket of sockets) socket.destroy();
    },
    waitFor(predicate, timeoutMs = 10_000) {
      const found = messages.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const waiter = { predicate, resolve: (m: ReceivedMail) => (clearTimeout(timer), resolve(m)) };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`no matching email within ${timeoutMs} ms (received ${messages.length})`));
        }, timeoutMs);
        waiters.push(waiter);
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// Sending email over SMTP with nodemailer: one pooled transport per distinct server+credentials, kept
// for reuse and closed on shutdown. Used by system emails (the install's SMTP), tenant email
// transports and test sends alike.
import { createHash } from 'node:crypto';
import nodemailer, { type Transporter } from 'nodemailer';

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
}

export interface SentMail {
  messageId: string;
  accepted: string[];
  rejected: string[];
  response: string;
}

/** smtp://user:pass@host:587 or smtps://user:pass@host:465 -> settings. */
export function smtpSettingsFromUrl(url: string): SmtpSettings {
  const u = new URL(url);
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:') throw new Error('SMTP URL must start with smtp:// or smtps://');
  const secure = u.protocol === 'smtps:';
  return {
    host: u.hostname,
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    username: u.username ? decodeURIComponent(u.username) : null,
    password: u.password ? decodeURIComponent(u.password) : null,
  };
}

export class SmtpPool {
  readonly #transports = new Map<string, Transporter>();
  readonly #tls: { rejectUnauthorized: true; ca?: string[] };

  /** `ca`: the certificate authorities trusted for the servers' TLS (net/trusted-cas.ts); Node's default store without it. */
  constructor(options: { ca?: string[] | undefined } = {}) {
    this.#tls = options.ca ? { rejectUnauthorized: true, ca: options.ca } : { rejectUnauthorized: true };
  }

  #transport(settings: SmtpSettings): Transporter {
    const id = createHash('sha256').update(JSON.stringify([settings.host, settings.port, settings.secure, settings.username, settings.password])).digest('hex');
    let transport = this.#transports.get(id);
    if (!transport) {
      transport = nodemailer.createTransport({
        pool: true,
        maxConnections: 5,
        host: settings.host,
        port: settings.port,
        secure: settings.secure,
        // Credentials never cross the wire in clear: a transport that authenticates without implicit
        // TLS must upgrade with STARTTLS, and nodemailer gives up (sending nothing) when the server does
        // not offer it, or when someone on the path strips the offer. A transport without credentials
        // (a relay on the local network) still upgrades whenever the server offers it.
        requireTLS: !settings.secure && Boolean(settings.username),
        auth: settings.username ? { user: settings.username, pass: settings.password ?? '' } : undefined,
        tls: this.#tls,
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 30_000,
      });
      this.#transports.set(id, transport);
    }
    return transport;
  }

  async send(settings: SmtpSettings, mail: OutgoingMail): Promise<SentMail> {
    const info = await this.#transport(settings).sendMail({
      from: mail.from,
      to: mail.to,
      subject: mail.subject,
      html: mail.html,
      text: mail.text,
      replyTo: mail.replyTo,
      headers: mail.headers,
      dkim: mail.dkim,
    });
    return {
      messageId: String(info.messageId ?? ''),
      accepted: (info.accepted ?? []).map(String),
      rejected: (info.rejected ?? []).map(String),
      response: String(info.response ?? ''),
    };
  }

  close(): void {
    for (const transport of this.#transports.values()) transport.close();
    this.#transports.clear();
  }
}

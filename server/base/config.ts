// Herald's configuration: defaults -> config file in the data directory -> HERALD_* environment -> flags.
// Parsed once by zod into a frozen, typed object; nothing else reads process.env for settings.
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { isProxyEntry } from './net/trusted-proxies.ts';

export const CONFIG_FILE_NAME = 'herald.json';

const durationSeconds = z.coerce.number().int().positive();

export const configSchema = z.object({
  /** Where Herald keeps its config file, key file, embedded PostgreSQL cluster and exports. */
  dataDir: z.string().min(1),
  /** single: pinned to one tenant, signup closed. multi: signup and tenant creation open. */
  mode: z.enum(['single', 'multi']).default('single'),
  /** External PostgreSQL; when empty Herald runs the embedded PostgreSQL in the data directory. */
  databaseUrl: z.string().optional(),
  /** Port of the embedded PostgreSQL on 127.0.0.1, chosen by `herald init` (54329 for data directories that predate it). */
  embeddedPostgresPort: z.coerce.number().int().min(1024).max(65535).optional(),
  host: z.string().default('127.0.0.1'),
  port: z.coerce.number().int().min(0).max(65535).default(8025),
  /** The URL people and browsers reach Herald at; used in emailed links. */
  publicUrl: z.string().url().optional(),
  /** The install's own SMTP (system emails and the default transport), e.g. smtp://user:pass@host:587. */
  smtpUrl: z.string().optional(),
  /** From address of system emails. */
  mailFrom: z.string().default('Herald <herald@localhost>'),
  /** Which client address counts for per-IP rate limits: the socket's, or X-Forwarded-For from these proxies. */
  trustedProxies: z
    .array(z.string().refine(isProxyEntry, 'must be an IP address or a CIDR range (10.0.0.0/8)'))
    .default([]),
  /**
   * Origins allowed by CORS on browser routes for every tenant, added to each tenant's own (cors_origins);
   * '*' allows any (contact tokens travel in a header, not a cookie).
   */
  corsOrigins: z.array(z.string()).default(['*']),
  logLevel: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  accessTokenTtlSeconds: durationSeconds.default(12 * 3600),
  contactTokenTtlSeconds: durationSeconds.default(3600),
  verificationLinkTtlSeconds: durationSeconds.default(48 * 3600),
  resetLinkTtlSeconds: durationSeconds.default(3600),
  resetCooldownSeconds: durationSeconds.default(60),
  invitationTtlSeconds: durationSeconds.default(7 * 24 * 3600),
  /** Largest JSON request body accepted, in bytes. */
  maxBodyBytes: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  /** How long a JSON request body may take to arrive once its headers have (408 after that). */
  requestBodyTimeoutMs: z.coerce.number().int().min(100).max(600_000).default(10_000),
  /** How long a request's headers may take to arrive; the connection is closed after that. */
  headersTimeoutMs: z.coerce.number().int().min(1000).max(600_000).default(10_000),
  /**
   * Open connections one client address may hold (0: no cap); past it a connection is answered 429 and
   * closed. Trusted proxies are not capped: every client behind them shares their address.
   */
  maxConnectionsPerClient: z.coerce.number().int().min(0).default(256),
  /** Encryption keys as id:base64 pairs, comma separated; overrides the data directory's key file. */
  encryptionKeys: z.string().optional(),
  /** Serve the demo page (/demo); on by default for installs bound to loopback. */
  demo: z.boolean().optional(),
  /** Base URLs of push and chat providers; tests point them at local peers. */
  providers: z
    .object({
      apnsProductionUrl: z.string().url().default('https://api.push.apple.com'),
      apnsSandboxUrl: z.string().url().default('https://api.sandbox.push.apple.com'),
      fcmUrl: z.string().url().default('https://fcm.googleapis.com'),
      fcmTokenUrl: z.string().url().optional(),
      expoUrl: z.string().url().default('https://exp.host'),
      /** The Slack Web API's base (chat.postMessage with a tenant's bot token). */
      slackUrl: z.string().url().default('https://slack.com'),
      /** The Telegram Bot API's base (sendMessage with a tenant's bot token). */
      telegramUrl: z.string().url().default('https://api.telegram.org'),
      /** Twilio's REST API (SMS) and Vonage's SMS API. */
      twilioUrl: z.string().url().default('https://api.twilio.com'),
      vonageUrl: z.string().url().default('https://rest.nexmo.com'),
      /** Extra CA certificate (PEM file) trusted for outbound TLS: push providers and SMTP servers. */
      caFile: z.string().optional(),
    })
    .default({
      apnsProductionUrl: 'https://api.push.apple.com',
      apnsSandboxUrl: 'https://api.sandbox.push.apple.com',
      fcmUrl: 'https://fcm.googleapis.com',
      expoUrl: 'https://exp.host',
      slackUrl: 'https://slack.com',
      telegramUrl: 'https://api.telegram.org',
      twilioUrl: 'https://api.twilio.com',
      vonageUrl: 'https://rest.nexmo.com',
    }),
  /**
   * Let web push endpoints (chosen by browsers) resolve to loopback or private addresses. Off in
   * production: it would let anyone with a contact token make Herald call internal services.
   */
  allowPrivatePushEndpoints: z.boolean().default(false),
  /**
   * Let tenants point their email transport at loopback or private addresses. Off in production: a
   * tenant could otherwise probe the install's network through its SMTP test send. The install's own
   * SMTP (smtpUrl, set-default) is trusted and never checked.
   */
  allowPrivateSmtpHosts: z.boolean().default(false),
  /** DNS server(s) used to check sender domains, host:port; empty means the system resolver. */
  dnsServers: z.array(z.string()).default([]),
  /**
   * How long the drain after SIGTERM/SIGINT may take in all (requests, in-flight jobs, the embedded
   * PostgreSQL's stop); past it Herald exits 1, naming what had not finished.
   */
  shutdownTimeoutMs: z.coerce.number().int().min(1000).max(600_000).default(30_000),
  /** Interval of the comment heartbeat on real-time streams (keeps proxies from closing idle connections). */
  streamHeartbeatMs: z.coerce.number().int().min(10).default(15_000),
  /**
   * Seconds without a heartbeat after which a worker's job is taken to be lost (its process died) and
   * is retried elsewhere (base/queue.ts); workers refresh their heartbeats five times as often.
   */
  lostWorkerSeconds: z.coerce.number().min(1).max(300).default(5),
  /**
   * Seconds to wait before each retry of a delivery that failed for now (a relay or provider down, a
   * 4xx answer): one entry per retry, after the last one it fails for good. The default rides out
   * about ten hours of outage.
   */
  deliveryRetrySchedule: z
    .array(
      z.coerce
        .number()
        .int()
        .min(1)
        .max(7 * 24 * 3600),
    )
    .min(1)
    .max(50)
    .default([30, 120, 600, 1800, 7200, 21600]),
  /**
   * Days an event in a final status, its deliveries, and a read or archived inbox item are kept
   * (jobs/retention-prune.ts).
   */
  retentionDays: z.coerce.number().int().min(1).max(36_500).default(90),
  /** Days an unread inbox item is kept: longer than retentionDays, since its contact has not seen it yet. */
  inboxUnreadRetentionDays: z.coerce.number().int().min(1).max(36_500).default(365),
  /** Worker concurrency per process for delivery jobs. */
  workerConcurrency: z.coerce.number().int().min(1).max(256).default(8),
  /** SMTP connections a process keeps open per server and credentials (email/smtp.ts). */
  smtpConnections: z.coerce.number().int().min(1).max(100).default(20),
  /** Of those, how many may store inbox deliveries at once; unset: the CPU cores plus one (see jobs/deliver-event.ts). */
  inboxStoreConcurrency: z.coerce.number().int().min(1).max(256).optional(),
  /** PostgreSQL connections per Herald process; unset: sized from the CPU cores and the role (see defaultPoolSize). */
  databasePoolSize: z.coerce.number().int().min(2).max(500).optional(),
  /** Bearer token of GET /metrics on the API port; without one, /metrics is not served there (404). */
  metricsToken: z.string().min(16, 'must be at least 16 characters').optional(),
  /** host:port of a separate, unauthenticated metrics listener (a private interface); off when unset. */
  metricsListen: z
    .string()
    .regex(/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'must be host:port, e.g. 127.0.0.1:9464 or [::1]:9464')
    .optional(),
  /**
   * Let webhook endpoint URLs (chosen by tenants) reach loopback or private addresses. Off in
   * production: a tenant could otherwise make Herald call the install's internal services.
   */
  allowPrivateWebhookUrls: z.boolean().default(false),
  /** host:port of the inbound SMTP listener that receives bounces and complaints; off when unset. */
  inboundSmtp: z
    .string()
    .regex(/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'must be host:port')
    .optional(),
  /** The domain of the VERP envelope sender (bounce+{token}@bounceDomain); its MX points at inboundSmtp. */
  bounceDomain: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/, 'must be a domain name')
    .optional(),
});

export type Config = Readonly<z.infer<typeof configSchema>>;
export type ConfigInput = z.input<typeof configSchema>;

/** Environment variables that map onto config keys (HERALD_PUBLIC_URL -> publicUrl, ...). */
const ENV_KEYS: Record<string, keyof ConfigInput> = {
  HERALD_HOME: 'dataDir',
  HERALD_MODE: 'mode',
  DATABASE_URL: 'databaseUrl',
  HERALD_DATABASE_URL: 'databaseUrl',
  HERALD_EMBEDDED_POSTGRES_PORT: 'embeddedPostgresPort',
  HERALD_DATABASE_POOL_SIZE: 'databasePoolSize',
  HERALD_LOST_WORKER_SECONDS: 'lostWorkerSeconds',
  HERALD_HOST: 'host',
  HERALD_PORT: 'port',
  HERALD_PUBLIC_URL: 'publicUrl',
  HERALD_SMTP_URL: 'smtpUrl',
  HERALD_MAIL_FROM: 'mailFrom',
  HERALD_LOG_LEVEL: 'logLevel',
  HERALD_ENCRYPTION_KEYS: 'encryptionKeys',
  HERALD_METRICS_TOKEN: 'metricsToken',
  HERALD_METRICS_LISTEN: 'metricsListen',
  HERALD_INBOUND_SMTP: 'inboundSmtp',
  HERALD_BOUNCE_DOMAIN: 'bounceDomain',
  HERALD_SHUTDOWN_TIMEOUT_MS: 'shutdownTimeoutMs',
  HERALD_REQUEST_BODY_TIMEOUT_MS: 'requestBodyTimeoutMs',
  HERALD_HEADERS_TIMEOUT_MS: 'headersTimeoutMs',
  HERALD_MAX_CONNECTIONS_PER_CLIENT: 'maxConnectionsPerClient',
  HERALD_RETENTION_DAYS: 'retentionDays',
  HERALD_INBOX_UNREAD_RETENTION_DAYS: 'inboxUnreadRetentionDays',
};
const ENV_BOOLEANS: Record<string, keyof ConfigInput> = {
  HERALD_DEMO: 'demo',
  HERALD_ALLOW_PRIVATE_PUSH_ENDPOINTS: 'allowPrivatePushEndpoints',
  HERALD_ALLOW_PRIVATE_SMTP_HOSTS: 'allowPrivateSmtpHosts',
  HERALD_ALLOW_PRIVATE_WEBHOOK_URLS: 'allowPrivateWebhookUrls',
};
const ENV_LISTS: Record<string, keyof ConfigInput> = {
  HERALD_TRUSTED_PROXIES: 'trustedProxies',
  HERALD_CORS_ORIGINS: 'corsOrigins',
  HERALD_DNS_SERVERS: 'dnsServers',
  HERALD_DELIVERY_RETRY_SCHEDULE: 'deliveryRetrySchedule',
};

/** The environment variable that sets a config key (the first listed, where two do), for messages that name it. */
export function environmentVariableOf(key: keyof ConfigInput): string | undefined {
  for (const names of [ENV_KEYS, ENV_BOOLEANS, ENV_LISTS])
    for (const [name, named] of Object.entries(names)) if (named === key) return name;
  return undefined;
}

export function defaultDataDir(): string {
  // As root the embedded PostgreSQL runs as 'postgres', which cannot enter /root: use a system path.
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  return isRoot ? '/var/lib/herald' : join(homedir(), '.herald');
}

export function configFilePath(dataDir: string): string {
  return join(dataDir, CONFIG_FILE_NAME);
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Writes the config file of a data directory, 0600: it may hold database and SMTP passwords. */
export function writeConfigFile(dataDir: string, values: Record<string, unknown>): void {
  const file = configFilePath(dataDir);
  writeFileSync(file, JSON.stringify(values, null, 2) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
}

/** Reads the config file of a data directory; {} when there is none. */
export function readConfigFile(dataDir: string): Record<string, unknown> {
  const file = configFilePath(dataDir);
  if (!existsSync(file)) return {};
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new ConfigError(`${file} must hold a JSON object`);
    }
    return parsed as Record<string, unknown>;
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
}

function fromEnvironment(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, key] of Object.entries(ENV_KEYS)) {
    const value = env[name];
    if (value !== undefined && value !== '') out[key] = value;
  }
  for (const [name, key] of Object.entries(ENV_BOOLEANS)) {
    const value = env[name]?.trim().toLowerCase();
    if (value)
      out[key] =
        value === 'true' || value === '1' || value === 'yes'
          ? true
          : value === 'false' || value === '0' || value === 'no'
            ? false
            : value;
  }
  for (const [name, key] of Object.entries(ENV_LISTS)) {
    const value = env[name];
    if (value !== undefined && value !== '')
      out[key] = value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
  }
  return out;
}

function dropUndefined(input: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
}

/**
 * Loads the configuration once. `flags` are the command line's values (undefined ones are ignored);
 * the data directory itself comes from flags, then HERALD_HOME, then ~/.herald.
 */
export function loadConfig(flags: Partial<ConfigInput> = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const envValues = fromEnvironment(env);
  const dataDir = resolve(String(flags.dataDir ?? envValues.dataDir ?? defaultDataDir()));
  const merged = {
    ...readConfigFile(dataDir),
    ...envValues,
    ...dropUndefined(flags as Record<string, unknown>),
    dataDir,
  };
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid configuration: ${problems}`);
  }
  return deepFreeze(parsed.data);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** The URL Herald is reached at: the configured public URL, else the listening address. */
export function publicBaseUrl(config: Config): string {
  return (config.publicUrl ?? `http://${config.host}:${config.port}`).replace(/\/+$/, '');
}

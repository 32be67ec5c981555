// Structured JSON-lines logging. Secret-looking fields are redacted before anything is written,
// so a careless `logger.info({ body })` cannot leak a password, key or token.
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

const SECRET_KEY =
  /pass(word)?|secret|token|private_?key|api_?key|authorization|credential|service_account|^key$|^smtp_?url$|^database_?url$/i;
export const REDACTED = '[redacted]';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function redact(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) ? REDACTED : redact(v, depth + 1);
  return out;
}

/** Removes the credentials from a connection URL (postgres://user:pass@host -> postgres://user:***@host). */
export function safeUrl(url: string | undefined): string | undefined {
  if (!url) return url;
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '[unparseable url]';
  }
}

export type LogSink = (line: string) => void;

export function createLogger(
  level: LogLevel,
  base: Record<string, unknown> = {},
  sink: LogSink = (l) => process.stderr.write(l + '\n'),
): Logger {
  const threshold = ORDER[level];
  const write = (lvl: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < threshold) return;
    const record = {
      time: new Date().toISOString(),
      level: lvl,
      msg,
      ...base,
      ...(fields ? (redact(fields) as object) : {}),
    };
    sink(JSON.stringify(record));
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => createLogger(level, { ...base, ...fields }, sink),
  };
}

// Shapes shared by many routes. One zod schema per shape: it validates, types and documents.
import { z } from 'zod';

/** Keys of notification types and brands. */
export const resourceKey = z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, 'must match ^[a-z0-9][a-z0-9_.-]{0,63}$');

/** A string id (UUID) in a path. */
export const idParam = z.string().min(1).max(64);

export const email = z
  .string()
  .trim()
  .max(254)
  .pipe(z.email({ message: 'must be a valid email address' }))
  .transform((v) => v.toLowerCase());

export const isoDateTime = z.iso.datetime({ offset: true });

/** A contact's id in the caller's own system. */
export const externalId = z.string().trim().min(1).max(255);

/**
 * A BCP 47 language tag (contacts' languages, template slots), canonicalised ("DE-at" -> "de-AT") so
 * that a contact's language and a template's slot match whatever case callers use.
 */
export const languageTag = z
  .string()
  .trim()
  .min(2)
  .max(35)
  .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$/, 'must be a BCP 47 language tag such as en or de-AT')
  .transform((value, ctx) => {
    const canonical = canonicalLanguage(value);
    if (canonical !== null) return canonical;
    ctx.issues.push({ code: 'custom', message: 'must be a BCP 47 language tag such as en or de-AT', input: value });
    return z.NEVER;
  });

/**
 * Canonical forms by tag as given: a trigger names a language per recipient, from the few an install
 * uses, and Intl.getCanonicalLocales costs more than the rest of a recipient's validation.
 */
const canonicalLanguages = new Map<string, string | null>();
const CANONICAL_LANGUAGES_KEPT = 1000;

function canonicalLanguage(tag: string): string | null {
  let canonical = canonicalLanguages.get(tag);
  if (canonical !== undefined) return canonical;
  try {
    canonical = Intl.getCanonicalLocales(tag)[0] ?? null;
  } catch {
    canonical = null;
  }
  if (canonicalLanguages.size >= CANONICAL_LANGUAGES_KEPT) canonicalLanguages.clear();
  canonicalLanguages.set(tag, canonical);
  return canonical;
}

/** Query booleans arrive as strings. */
export const queryBoolean = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

/** The paging of every paged list: `limit` 50 by default, at most 200. */
export const cursorPage = {
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(512).optional(),
};

/** The channels Herald delivers over: the one list every schema, service and command takes them from. */
export const CHANNELS = ['inbox', 'email', 'push', 'web_push', 'sms', 'chat', 'http'] as const;
export const Channel = z.enum(CHANNELS).meta({ id: 'Channel' });
export type Channel = z.infer<typeof Channel>;

export const PushProvider = z.enum(['apns', 'fcm', 'expo', 'webpush']).meta({ id: 'PushProvider' });
export type PushProvider = z.infer<typeof PushProvider>;

/**
 * Whether a URL carries no user name or password: a tenant's URL is shown and audited, so credentials
 * go in the write-only headers instead.
 */
export function withoutUrlCredentials(value: string): boolean {
  try {
    const url = new URL(value);
    return !url.username && !url.password;
  } catch {
    return true;
  }
}

/** A free-form object (202 answers of resend-verification and password-reset). */
export const FreeFormObject = z.record(z.string(), z.unknown());

/**
 * Any JSON value (brand values, template variables, audit changes). Described as the empty schema,
 * any JSON, rather than as a union that refers to itself: client generators turn such a schema into a
 * type alias that refers to itself, which TypeScript rejects (TS2502). A request body is JSON already,
 * so there is nothing more to check than that a value is there.
 */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export const JsonValue = z
  .custom<JsonValue>((value) => value !== undefined)
  .meta({ id: 'JsonValue', description: 'Any JSON value' });

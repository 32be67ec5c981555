// Contacts: the recipients of a tenant, addressed by the caller's own external_id.
import { z } from 'zod';
import { email, externalId, FreeFormObject, isoDateTime, languageTag } from './common.ts';
import { parsePhoneNumberWithError } from 'libphonenumber-js/max';
import { isUuid } from '../base/ids.ts';

/** A service-assigned id in a path (UUID); anything else is a 422 on the path. */
export const uuidParam = z.string().refine(isUuid, 'must be a UUID').meta({ format: 'uuid' });

export const ContactIdParams = z.object({ id: uuidParam });

/**
 * A phone number in E.164 (`+4915112345678`), or null when the text is not a valid number given in
 * international form (with its `+` and country code; no extension). Numbers are checked against the
 * full metadata: a number of the right length in an unassigned range is refused too.
 */
export function normalisePhone(text: string): string | null {
  const value = text.trim();
  if (!value.startsWith('+') || value.length > 64) return null;
  try {
    const parsed = parsePhoneNumberWithError(value);
    if (parsed.ext || !parsed.isValid()) return null;
    return parsed.number;
  } catch {
    return null;
  }
}

const E164_MESSAGE = 'must be a valid phone number in international E.164 form, such as +4915112345678';

/** A contact's phone: validated and stored as E.164, whatever spacing the caller wrote it with. */
const phone = z
  .string()
  .trim()
  .min(1)
  .max(64)
  // A refinement, not an issue raised in the transform: a refinement's issue leaves the union of a
  // trigger's recipients naming this field rather than the whole recipient.
  .refine((value) => normalisePhone(value) !== null, E164_MESSAGE)
  .transform((value) => normalisePhone(value) ?? value)
  .meta({ description: 'E.164, e.g. +4915112345678 (spaces and dashes are removed)' });
const name = z.string().trim().min(1).max(200);

/** The mutable fields of a contact; null clears a field. */
const mutableFields = {
  email: email.nullable().optional(),
  phone: phone.nullable().optional(),
  name: name.nullable().optional(),
  language: languageTag.nullable().optional(),
  properties: FreeFormObject.nullable().optional(),
};

/** The fields PUT replaces, and a command may set or clear. */
export const MUTABLE_CONTACT_FIELDS = Object.keys(mutableFields) as Array<keyof typeof mutableFields>;
/** The mutable fields that hold one text value each (all but properties). */
export const CONTACT_TEXT_FIELDS = MUTABLE_CONTACT_FIELDS.filter(
  (field): field is Exclude<typeof field, 'properties'> => field !== 'properties',
);

/**
 * A contact's fields as a caller gives them, by external_id: the one definition that creating a
 * contact, bulk and import lines, and a trigger's object recipients all validate against.
 */
export const ContactFields = z.object({ external_id: externalId, ...mutableFields });
export type ContactFields = z.infer<typeof ContactFields>;

export const CreateContactRequest = ContactFields.meta({ id: 'CreateContactRequest' });
export type CreateContactRequest = ContactFields;

/** PUT replaces every mutable field: a field left out becomes null (properties: {}). external_id never changes. */
export const ReplaceContactRequest = z.object(mutableFields).meta({ id: 'ReplaceContactRequest' });
export type ReplaceContactRequest = z.infer<typeof ReplaceContactRequest>;

/** Whether this runtime's time zone database knows the name (IANA names and their aliases). */
function isKnownTimezone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const clockTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a local time HH:MM (00:00 to 23:59)');

/** A daily window of local time; across midnight when `end` comes before `start`. */
export const QuietHours = z
  .object({ start: clockTime, end: clockTime })
  .refine((q) => q.start !== q.end, { message: 'start and end must differ', path: ['end'] })
  .meta({ id: 'QuietHours' });

export const SetQuietHoursRequest = z
  .object({
    timezone: z
      .string()
      .min(1)
      .max(64)
      .refine(isKnownTimezone, { message: 'must be an IANA time zone such as "Europe/Berlin"' }),
    quiet_hours: QuietHours.nullable().describe('null: no quiet hours'),
  })
  .meta({ id: 'SetQuietHoursRequest' });
export type SetQuietHoursRequest = z.infer<typeof SetQuietHoursRequest>;

export const ContactResponse = z
  .object({
    id: z.string(),
    external_id: z.string(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    name: z.string().nullable(),
    language: z.string().nullable(),
    properties: FreeFormObject,
    timezone: z.string().nullable(),
    quiet_hours: QuietHours.nullable(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'ContactResponse' });
export type ContactResponse = z.infer<typeof ContactResponse>;

export const FindContactQuery = z.object({ external_id: externalId });

// Entries are validated one by one (an invalid entry is reported in `errors`, the others are applied).
export const BulkContactsRequest = z
  .object({
    contacts: z
      .array(z.unknown())
      .min(1)
      .max(500)
      .describe(
        '1 to 500 CreateContactRequest objects; contacts are matched by external_id, a field left out keeps its stored value',
      ),
  })
  .meta({ id: 'BulkContactsRequest' });

export const BulkContactsResponse = z
  .object({
    created: z.number().int(),
    updated: z.number().int(),
    errors: z.array(z.object({ index: z.number().int(), detail: z.string() })),
  })
  .meta({ id: 'BulkContactsResponse' });
export type BulkContactsResponse = z.infer<typeof BulkContactsResponse>;

export const ContactTokenRequest = z.object({ external_id: externalId }).meta({ id: 'ContactTokenRequest' });

export const ContactTokenResponse = z
  .object({
    token: z.string(),
    token_type: z.literal('bearer'),
    expires_in: z.number().int(),
    contact_id: z.string(),
  })
  .meta({ id: 'ContactTokenResponse' });
export type ContactTokenResponse = z.infer<typeof ContactTokenResponse>;

export const SetLanguageRequest = z.object({ language: languageTag }).meta({ id: 'SetLanguageRequest' });

export const ContactImportResponse = z
  .object({
    created: z.number().int(),
    updated: z.number().int(),
    /** How many lines were refused in all; `errors` lists the first 100. */
    refused: z.number().int(),
    errors: z.array(z.object({ line: z.number().int(), detail: z.string() })),
  })
  .meta({ id: 'ContactImportResponse' });
export type ContactImportResponse = z.infer<typeof ContactImportResponse>;

// Contacts: create, read, find by external_id, replace, delete, bulk create-or-update, preferred
// language, contact tokens, and the scope rule every /v1/contacts/{id}/... route applies.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, ValidationFailure, notFound } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { execute, queryOne } from '../base/db/sql.ts';
import type { Credential } from '../base/auth/credentials.ts';
import type { Context } from '../base/context.ts';
import { parseInput } from '../base/validation.ts';
import { upsertContacts } from './contact-upsert.ts';
import { CONTACT_COLUMNS, type ContactRow } from '../base/db/contacts.ts';
import {
  CreateContactRequest,
  type ContactFields,
  type BulkContactsResponse,
  type ContactResponse,
  type ContactTokenResponse,
  type ReplaceContactRequest,
  type SetQuietHoursRequest,
} from '../schemas/contacts.ts';
import { toIsoTimestamp } from '../base/timestamps.ts';

const INSERT_CONTACT = `INSERT INTO contacts (id, tenant_id, external_id, email, phone, name, language, properties)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (tenant_id, external_id) DO NOTHING
     RETURNING ${CONTACT_COLUMNS}`;
const GET_CONTACT = `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE id = $1 AND tenant_id = $2`;
const FIND_CONTACT_BY_EXTERNAL_ID = `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE tenant_id = $1 AND external_id = $2`;
const REPLACE_CONTACT = `UPDATE contacts
      SET email = $3, phone = $4, name = $5, language = $6, properties = $7, updated_at = now()
      WHERE id = $1 AND tenant_id = $2
      RETURNING ${CONTACT_COLUMNS}`;
const DELETE_CONTACT = `DELETE FROM contacts WHERE id = $1 AND tenant_id = $2`;
const SET_CONTACT_LANGUAGE = `UPDATE contacts SET language = $3, updated_at = now()
  WHERE id = $1 AND tenant_id = $2 RETURNING ${CONTACT_COLUMNS}`;
const SET_CONTACT_QUIET_HOURS = `UPDATE contacts SET timezone = $3, quiet_hours = $4::jsonb, updated_at = now()
  WHERE id = $1 AND tenant_id = $2 RETURNING ${CONTACT_COLUMNS}`;

export function toContactResponse(row: ContactRow): ContactResponse {
  return {
    id: row.id,
    external_id: row.external_id,
    email: row.email,
    phone: row.phone,
    name: row.name,
    language: row.language,
    properties: row.properties ?? {},
    timezone: row.timezone,
    quiet_hours: row.quiet_hours,
    created_at: toIsoTimestamp(row.created_at),
    updated_at: toIsoTimestamp(row.updated_at),
  };
}

/** 409 when the external_id is taken: the recommended client pattern mints first and creates on 404. */
export async function createContact(
  em: EntityManager,
  tenantId: string,
  input: CreateContactRequest,
): Promise<ContactRow> {
  const row = await queryOne<ContactRow>(em, INSERT_CONTACT, [
    newId(),
    tenantId,
    input.external_id,
    input.email ?? null,
    input.phone ?? null,
    input.name ?? null,
    input.language ?? null,
    JSON.stringify(input.properties ?? {}),
  ]);
  if (!row) throw new AppError('already_exists', 'A contact with this external_id already exists');
  return row;
}

export async function getContact(em: EntityManager, tenantId: string, id: string): Promise<ContactRow> {
  const row = await queryOne<ContactRow>(em, GET_CONTACT, [id, tenantId]);
  if (!row) throw notFound('Contact');
  return row;
}

export async function findContactByExternalId(
  em: EntityManager,
  tenantId: string,
  externalId: string,
): Promise<ContactRow> {
  const row = await queryOne<ContactRow>(em, FIND_CONTACT_BY_EXTERNAL_ID, [tenantId, externalId]);
  if (!row) throw notFound('Contact');
  return row;
}

/**
 * The contact a /v1/contacts/{id}/... route acts on. A contact token acts only as its own contact and a
 * tenant credential only within its tenant; anything else is 404, so ids of others are never confirmed.
 */
export async function contactInScope(em: EntityManager, auth: Credential, id: string): Promise<ContactRow> {
  if (auth.kind === 'contact' && auth.contactId !== id) throw notFound('Contact');
  return getContact(em, auth.tenantId, id);
}

export async function replaceContact(
  em: EntityManager,
  tenantId: string,
  id: string,
  fields: ReplaceContactRequest,
): Promise<ContactRow> {
  const row = await queryOne<ContactRow>(em, REPLACE_CONTACT, [
    id,
    tenantId,
    fields.email ?? null,
    fields.phone ?? null,
    fields.name ?? null,
    fields.language ?? null,
    JSON.stringify(fields.properties ?? {}),
  ]);
  if (!row) throw notFound('Contact');
  return row;
}

/** Deleting a contact removes its preferences, subscriptions, inbox and stream; its events stay (contact_id cleared). */
export async function deleteContact(em: EntityManager, tenantId: string, id: string): Promise<void> {
  const deleted = await execute(em, DELETE_CONTACT, [id, tenantId]);
  if (deleted === 0) throw notFound('Contact');
}

export async function setContactLanguage(
  em: EntityManager,
  tenantId: string,
  id: string,
  language: string,
): Promise<ContactRow> {
  const row = await queryOne<ContactRow>(em, SET_CONTACT_LANGUAGE, [id, tenantId, language]);
  if (!row) throw notFound('Contact');
  return row;
}

/** Sets the contact's time zone and quiet hours (null: none); remote channels wait for their end. */
export async function setContactQuietHours(
  em: EntityManager,
  tenantId: string,
  id: string,
  input: SetQuietHoursRequest,
): Promise<ContactRow> {
  const row = await queryOne<ContactRow>(em, SET_CONTACT_QUIET_HOURS, [
    id,
    tenantId,
    input.timezone,
    input.quiet_hours === null ? null : JSON.stringify(input.quiet_hours),
  ]);
  if (!row) throw notFound('Contact');
  return row;
}

/**
 * Creates or updates up to 500 contacts by external_id. Each entry is validated on its own: invalid
 * entries are reported by index and the valid ones are applied, in one statement.
 */
export async function bulkUpsertContacts(
  em: EntityManager,
  tenantId: string,
  entries: unknown[],
): Promise<BulkContactsResponse> {
  const valid: ContactFields[] = [];
  const errors: BulkContactsResponse['errors'] = [];
  entries.forEach((entry, index) => {
    const parsed = parseContactEntry(entry);
    if ('contact' in parsed) valid.push(parsed.contact);
    else errors.push({ index, detail: parsed.detail });
  });
  const rows = await upsertContacts(em, tenantId, valid);
  const created = rows.filter((r) => r.created).length;
  return { created, updated: rows.length - created, errors };
}

/**
 * One entry of a bulk write or an import, validated on its own (text PostgreSQL cannot store included):
 * the contact, or why it was refused.
 */
export function parseContactEntry(entry: unknown): { contact: ContactFields } | { detail: string } {
  try {
    return { contact: parseInput('body', CreateContactRequest, entry) };
  } catch (error) {
    if (!(error instanceof ValidationFailure)) throw error;
    return { detail: error.issues.map((i) => `${i.loc.slice(1).join('.') || '(entry)'}: ${i.msg}`).join('; ') };
  }
}

/** Mints a short-lived token scoped to one contact; 404 when the external_id is not a contact yet. */
export async function mintContactToken(
  runtime: Context,
  em: EntityManager,
  tenantId: string,
  externalId: string,
): Promise<ContactTokenResponse> {
  const contact = await findContactByExternalId(em, tenantId, externalId);
  const ttl = runtime.config.contactTokenTtlSeconds;
  return {
    token: runtime.tokens.sign('contact', contact.id, tenantId, ttl, runtime.clock.now()),
    token_type: 'bearer',
    expires_in: ttl,
    contact_id: contact.id,
  };
}

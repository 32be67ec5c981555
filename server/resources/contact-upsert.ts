// Create-or-update of contacts by external_id, in one statement for up to hundreds of contacts: used
// by triggers (a recipient that is not a contact yet is created bare; an object recipient upserts its
// fields) and by bulk import. A field left out (or null) keeps its stored value; properties merge.
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../base/ids.ts';
import { query } from '../base/db/sql.ts';
import { jsonRowsParameter, jsonRowsSql, type JsonRowColumns } from '../base/db/json-rows.ts';
import { CONTACT_COLUMNS, type ContactRow } from '../base/db/contacts.ts';
import type { ContactFields } from '../schemas/contacts.ts';

export interface UpsertedContact extends ContactRow {
  /** true when this call created the contact. */
  created: boolean;
}

/** One row of the upsert's input. */
export type ContactUpsertInput = { id: string } & {
  [Field in keyof ContactFields]-?: Exclude<ContactFields[Field], undefined>;
};

/** The upsert's input columns, as JSON rows (db/json-rows.ts) give them: to the import's statement, and in each trigger. */
export const CONTACT_INPUT_COLUMNS = [
  ['id', 'uuid'],
  ['external_id', 'text'],
  ['email', 'text'],
  ['phone', 'text'],
  ['name', 'text'],
  ['language', 'text'],
  ['properties', 'jsonb'],
] as const satisfies JsonRowColumns<ContactUpsertInput>;

/**
 * The one create-or-update statement for contacts, over `rows`: the SQL of a FROM item with typed
 * columns `tenant_id`, `id`, `external_id`, `email`, `phone`, `name`, `language`, `properties` (jsonb,
 * NULL for none), at most one row per tenant and external_id (one statement cannot touch a row twice).
 * Rows are written in the order the source yields them. The trigger statement embeds it as a CTE.
 */
export function contactUpsertSql(rows: string): string {
  return `INSERT INTO contacts AS c (id, tenant_id, external_id, email, phone, name, language, properties)
     SELECT r.id, r.tenant_id, r.external_id, r.email, r.phone, r.name, r.language, coalesce(r.properties, '{}'::jsonb)
       FROM ${rows} AS r
     ON CONFLICT (tenant_id, external_id) DO UPDATE SET
       email = coalesce(EXCLUDED.email, c.email),
       phone = coalesce(EXCLUDED.phone, c.phone),
       name = coalesce(EXCLUDED.name, c.name),
       language = coalesce(EXCLUDED.language, c.language),
       properties = c.properties || EXCLUDED.properties,
       updated_at = CASE
         WHEN (EXCLUDED.email, EXCLUDED.phone, EXCLUDED.name, EXCLUDED.language) IS NOT DISTINCT FROM
                (NULL::text, NULL::text, NULL::text, NULL::text)
              AND EXCLUDED.properties = '{}'::jsonb THEN c.updated_at
         ELSE now() END
     RETURNING ${CONTACT_COLUMNS.split(', ')
       .map((col) => `c.${col}`)
       .join(', ')}, (xmax = 0) AS created`;
}

/**
 * The upsert's rows for one tenant ($1 the tenant; $2 the rows), in external_id order, as the trigger
 * statement writes them: statements that lock the same contacts in the same order wait for each other
 * instead of deadlocking.
 */
const TENANT_ROWS = `(SELECT $1::uuid AS tenant_id, x.* FROM ${jsonRowsSql('$2', CONTACT_INPUT_COLUMNS)} AS x
  ORDER BY x.external_id)`;

const UPSERT_TENANT_ROWS = contactUpsertSql(TENANT_ROWS);
const COUNTED_UPSERT = `WITH upserted AS (${UPSERT_TENANT_ROWS})
  SELECT count(*) FILTER (WHERE created)::int AS created, count(*) FILTER (WHERE NOT created)::int AS updated
    FROM upserted`;

/**
 * The upsert's input: one row per distinct external_id, in first-seen order. Repeated external_ids
 * are merged (later fields win), since one statement cannot touch a row twice.
 */
export function contactUpsertInput(inputs: ContactFields[]): ContactUpsertInput[] {
  const merged = new Map<string, ContactFields>();
  for (const input of inputs) {
    const previous = merged.get(input.external_id);
    merged.set(input.external_id, previous ? mergeFields(previous, input) : input);
  }
  return [...merged.values()].map((c) => ({
    id: newId(),
    external_id: c.external_id,
    email: c.email ?? null,
    phone: c.phone ?? null,
    name: c.name ?? null,
    language: c.language ?? null,
    properties: c.properties ?? null,
  }));
}

/** True when the row only names a contact: upserting it creates the contact if need be and changes nothing else. */
export function isBareContact(row: ContactUpsertInput): boolean {
  return (
    row.email === null && row.phone === null && row.name === null && row.language === null && row.properties === null
  );
}

function tenantRowsParameters(tenantId: string, rows: ContactUpsertInput[]): unknown[] {
  return [tenantId, jsonRowsParameter(rows, CONTACT_INPUT_COLUMNS)];
}

/** Upserts contacts by external_id; returns one row per distinct external_id, in input order. */
export async function upsertContacts(
  em: EntityManager,
  tenantId: string,
  inputs: ContactFields[],
): Promise<UpsertedContact[]> {
  const rows = contactUpsertInput(inputs);
  if (rows.length === 0) return [];
  const result = await query<ContactRow & { created: boolean }>(
    em,
    UPSERT_TENANT_ROWS,
    tenantRowsParameters(tenantId, rows),
  );
  const byExternal = new Map(result.map((r) => [r.external_id, r]));
  return rows.map((r) => byExternal.get(r.external_id)!);
}

/** Upserts contacts by external_id as upsertContacts does, answering only how many were created and updated (imports). */
export async function upsertContactCounts(
  em: EntityManager,
  tenantId: string,
  inputs: ContactFields[],
): Promise<{ created: number; updated: number }> {
  const rows = contactUpsertInput(inputs);
  if (rows.length === 0) return { created: 0, updated: 0 };
  const [counts] = await query<{ created: number; updated: number }>(
    em,
    COUNTED_UPSERT,
    tenantRowsParameters(tenantId, rows),
  );
  return counts!;
}

function mergeFields(a: ContactFields, b: ContactFields): ContactFields {
  return {
    external_id: a.external_id,
    email: b.email ?? a.email,
    phone: b.phone ?? a.phone,
    name: b.name ?? a.name,
    language: b.language ?? a.language,
    properties: a.properties || b.properties ? { ...a.properties, ...b.properties } : null,
  };
}

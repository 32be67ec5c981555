// The public schema as text, read from the catalog (pg_dump may be missing where the tests run, and
// the embedded PostgreSQL ships none): tables with their columns, constraints, indexes, sequences,
// functions, triggers and comments, each sorted by name, so the text depends on the schema alone and
// not on the order objects were created in. migrations/schema.sql holds it for the migrations as they
// stand; test/migrations/schema.test.ts compares a freshly migrated database with it.
import pg from 'pg';

export const SCHEMA_FILE = new URL('./schema.sql', import.meta.url);
export const REGENERATE_COMMAND = 'DATABASE_URL=postgres://<admin>@<host>/postgres npm run schema:dump';

interface TableRow {
  name: string;
  persistence: string;
  options: string;
}
interface ColumnRow {
  table: string;
  name: string;
  type: string;
  not_null: string;
  default: string;
  identity: string;
}
interface ObjectRow {
  table: string;
  name: string;
  definition: string;
  options: string;
}
interface SequenceRow {
  name: string;
  type: string;
  owned_by: string;
}
interface CommentRow {
  target: string;
  description: string;
}

const TABLES = `
  SELECT c.relname AS name, c.relpersistence AS persistence, coalesce(array_to_string(c.reloptions, ', '), '') AS options
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY c.relname`;
const COLUMNS = `
  SELECT c.relname AS "table", a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull::text AS not_null,
         coalesce(pg_get_expr(d.adbin, d.adrelid), '') AS "default", a.attidentity AS identity
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
   ORDER BY c.relname, a.attnum`;
const CONSTRAINTS = `
  SELECT c.relname AS "table", k.conname AS name, pg_get_constraintdef(k.oid) AS definition
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
   -- PostgreSQL 18 lists NOT NULL as constraints too (contype 'n'); the columns already say it.
   WHERE n.nspname = 'public' AND k.contype <> 'n' ORDER BY c.relname, k.conname`;
const INDEXES = `
  SELECT i.relname AS name, pg_get_indexdef(i.oid) AS definition, coalesce(array_to_string(i.reloptions, ', '), '') AS options
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_namespace n ON n.oid = i.relnamespace
   WHERE n.nspname = 'public' AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid AND k.contype IN ('p', 'u', 'x'))
   ORDER BY i.relname`;
const SEQUENCES = `
  SELECT s.relname AS name, format_type(q.seqtypid, NULL) AS type, coalesce(t.relname || '.' || a.attname, '') AS owned_by
    FROM pg_sequence q JOIN pg_class s ON s.oid = q.seqrelid JOIN pg_namespace n ON n.oid = s.relnamespace
    LEFT JOIN pg_depend d ON d.objid = s.oid AND d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
    LEFT JOIN pg_class t ON t.oid = d.refobjid
    LEFT JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
   WHERE n.nspname = 'public' ORDER BY s.relname`;
const FUNCTIONS = `
  SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' AS name, pg_get_functiondef(p.oid) AS definition
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE n.nspname = 'public' ORDER BY 1`;
const TRIGGERS = `
  SELECT c.relname AS "table", t.tgname AS name, pg_get_triggerdef(t.oid) AS definition
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'public' AND NOT t.tgisinternal ORDER BY c.relname, t.tgname`;
const COMMENTS = `
  SELECT CASE WHEN d.classoid = 'pg_proc'::regclass THEN 'FUNCTION ' || d.objoid::regprocedure::text
              WHEN d.objsubid = 0 THEN 'TABLE ' || d.objoid::regclass::text
              ELSE 'COLUMN ' || d.objoid::regclass::text || '.' || a.attname END AS target, d.description
    FROM pg_description d
    LEFT JOIN pg_attribute a ON a.attrelid = d.objoid AND a.attnum = d.objsubid AND d.classoid = 'pg_class'::regclass
    LEFT JOIN pg_class c ON c.oid = d.objoid AND d.classoid = 'pg_class'::regclass
    LEFT JOIN pg_proc p ON p.oid = d.objoid AND d.classoid = 'pg_proc'::regclass
   WHERE coalesce(c.relnamespace, p.pronamespace) = 'public'::regnamespace ORDER BY 1`;

function column(row: ColumnRow): string {
  let text = `  ${row.name} ${row.type}`;
  if (row.not_null === 'true') text += ' NOT NULL';
  if (row.default) text += ` DEFAULT ${row.default}`;
  if (row.identity) text += ` GENERATED ${row.identity === 'a' ? 'ALWAYS' : 'BY DEFAULT'} AS IDENTITY`;
  return text;
}

/** The public schema of the database at `url`, as SQL-like text sorted by object name. */
export async function describeSchema(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const rows = async <T extends object>(sql: string): Promise<T[]> => (await client.query<T>(sql)).rows;
    const columns = await rows<ColumnRow>(COLUMNS);
    const out: string[] = [];
    for (const table of await rows<TableRow>(TABLES)) {
      const body = columns
        .filter((c) => c.table === table.name)
        .map(column)
        .join(',\n');
      const kind = table.persistence === 'u' ? 'UNLOGGED TABLE' : 'TABLE';
      out.push(`CREATE ${kind} ${table.name} (\n${body}\n)${table.options ? ` WITH (${table.options})` : ''};`);
    }
    for (const c of await rows<ObjectRow>(CONSTRAINTS))
      out.push(`ALTER TABLE ${c.table} ADD CONSTRAINT ${c.name} ${c.definition};`);
    for (const i of await rows<ObjectRow>(INDEXES))
      out.push(`${i.definition}${i.options && !i.definition.includes(' WITH (') ? ` WITH (${i.options})` : ''};`);
    for (const s of await rows<SequenceRow>(SEQUENCES))
      out.push(`CREATE SEQUENCE ${s.name} AS ${s.type}${s.owned_by ? ` OWNED BY ${s.owned_by}` : ''};`);
    for (const f of await rows<ObjectRow>(FUNCTIONS)) out.push(`${f.definition.trimEnd()};`);
    for (const t of await rows<ObjectRow>(TRIGGERS)) out.push(`${t.definition};`);
    for (const c of await rows<CommentRow>(COMMENTS))
      out.push(`COMMENT ON ${c.target} IS '${c.description.replaceAll("'", "''")}';`);
    return `-- The public schema the migrations produce (npm run schema:dump writes this file).\n\n${out.join('\n\n')}\n`;
  } finally {
    await client.end();
  }
}

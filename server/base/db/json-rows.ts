// Rows given to a statement in one JSON parameter: an array of positional arrays, one per row, read
// back as a FROM item whose columns' names and types are declared once, beside the statement.
// PostgreSQL parses a parameter's JSON into jsonb, token by token, before the statement runs: keyed
// objects repeat every column's name in every row, and jsonb_to_recordset then looks each one up
// again, where a positional row is its values alone. On the delivery path, whose statements take
// hundreds of rows, that parsing is a large share of a statement's work.

/**
 * A FROM item's columns, named as the rows' properties (R), each with its PostgreSQL type (`jsonb` for
 * a JSON value, `text[]` for a JSON array of strings).
 */
export type JsonRowColumns<R extends object = Record<string, unknown>> = ReadonlyArray<
  readonly [name: keyof R & string, type: string]
>;

/**
 * SQL of a FROM item (alias it) over `parameter` (e.g. `$1`, or a jsonb column holding nested rows):
 * the columns, typed, and `n`, the row's position from 1. A JSON null, or a position past the row's
 * end, reads as NULL, whatever the column's type.
 */
export function jsonRowsSql<R extends object>(parameter: string, columns: JsonRowColumns<R>): string {
  const selected = columns.map(([name, type], i) => `${columnSql(`r->${i}`, `r->>${i}`, type)} AS "${name}"`);
  return `(SELECT ${selected.join(', ')}, n FROM jsonb_array_elements(${parameter}::jsonb) WITH ORDINALITY AS rows(r, n))`;
}

function columnSql(value: string, text: string, type: string): string {
  if (type === 'jsonb') return `nullif(${value}, 'null'::jsonb)`;
  if (type.endsWith('[]'))
    return `CASE WHEN jsonb_typeof(${value}) = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(${value}))::${type} END`;
  return `(${text})::${type}`;
}

/**
 * Each row's values in the columns' order, a missing one as null, without its trailing nulls (a
 * position past a row's end reads as NULL too; so columns that are mostly null go last): for rows
 * nested in another row's column.
 */
export function jsonRows<R extends object>(rows: readonly R[], columns: JsonRowColumns<R>): unknown[][] {
  return rows.map((row) => {
    const values = columns.map(([name]) => row[name] ?? null);
    let end = values.length;
    while (end > 0 && values[end - 1] === null) end--;
    values.length = end;
    return values;
  });
}

/** The parameter's text: jsonRows as JSON. */
export function jsonRowsParameter<R extends object>(rows: readonly R[], columns: JsonRowColumns<R>): string {
  return JSON.stringify(jsonRows(rows, columns));
}

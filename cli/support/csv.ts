// A streaming CSV reader (RFC 4180: comma separated, double quotes around fields that hold commas,
// quotes or line breaks, "" for a quote inside them; CRLF or LF line ends), record by record, so a file
// of any size is read in constant memory. Chunk boundaries may fall anywhere.
import { CONTACT_TEXT_FIELDS } from '../../server/schemas/contacts.ts';

const State = {
  FieldStart: 0,
  Unquoted: 1,
  Quoted: 2,
  /** A quote inside a quoted field: the next character tells a closing quote from a doubled one. */
  QuoteInQuoted: 3,
} as const;
type State = (typeof State)[keyof typeof State];

/** Yields each record's fields with the line it starts on (1-based); blank lines are skipped. */
export async function* csvRecords(text: AsyncIterable<string>): AsyncGenerator<{ line: number; fields: string[] }> {
  let state: State = State.FieldStart;
  let fields: string[] = [];
  let field = '';
  let line = 1;
  let recordLine = 1;
  let afterCr = false;
  const records: Array<{ line: number; fields: string[] }> = [];
  const endRecord = () => {
    fields.push(field);
    if (!(fields.length === 1 && fields[0] === '')) records.push({ line: recordLine, fields });
    fields = [];
    field = '';
    state = State.FieldStart;
  };
  for await (const chunk of text) {
    for (const c of chunk) {
      const crlf = afterCr && c === '\n';
      afterCr = c === '\r';
      if (crlf) continue; // the \r ended the record (or was kept in a quoted field)
      if (state === State.Quoted) {
        if (c === '"') state = State.QuoteInQuoted;
        else if (c === '\n' || c === '\r') {
          line++;
          field += '\n';
        } else field += c;
        continue;
      }
      if (state === State.QuoteInQuoted && c === '"') {
        field += '"';
        state = State.Quoted;
        continue;
      }
      if (c === ',') {
        fields.push(field);
        field = '';
        state = State.FieldStart;
      } else if (c === '\n' || c === '\r') {
        endRecord();
        line++;
        recordLine = line;
      } else if (c === '"' && state === State.FieldStart) {
        state = State.Quoted;
      } else {
        field += c;
        state = State.Unquoted;
      }
    }
    yield* records.splice(0);
  }
  if (state !== State.FieldStart || field !== '' || fields.length > 0) endRecord();
  yield* records.splice(0);
}

/** The contact fields a CSV column may name; any other column becomes a property (a string). */
const CONTACT_COLUMNS = new Set<string>(['external_id', ...CONTACT_TEXT_FIELDS]);

/**
 * NDJSON contact lines from CSV whose first record names the columns: external_id (required), email,
 * phone, name, language, `properties` (a JSON object) and any other column as a string property. An
 * empty cell leaves the field out (a field left out keeps its stored value). `onRecord` hears the CSV
 * line each NDJSON line comes from, in order.
 */
export async function* csvContactsAsNdjson(
  text: AsyncIterable<string>,
  onRecord: (csvLine: number) => void = () => undefined,
): AsyncGenerator<string> {
  let header: string[] | null = null;
  for await (const { line, fields } of csvRecords(text)) {
    if (!header) {
      header = fields.map((f) => f.trim());
      if (!header.includes('external_id'))
        throw new CsvHeaderError(`the CSV header (line ${line}) must name an external_id column`);
      continue;
    }
    const contact: Record<string, unknown> = {};
    const properties: Record<string, unknown> = {};
    header.forEach((column, i) => {
      const value = fields[i];
      if (value === undefined || value === '') return;
      if (CONTACT_COLUMNS.has(column)) contact[column] = value;
      else if (column === 'properties') Object.assign(properties, parseObject(value) ?? { properties: value });
      else properties[column] = value;
    });
    if (Object.keys(properties).length > 0) contact.properties = properties;
    onRecord(line);
    yield JSON.stringify(contact) + '\n';
  }
}

export class CsvHeaderError extends Error {
  override name = 'CsvHeaderError';
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

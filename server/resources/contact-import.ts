// Streaming contact import: NDJSON (one contact object a line) read as it arrives, never held whole.
// Lines are validated one by one (contacts.ts parseContactEntry, the bulk route's rule) and the valid
// ones are written by the contacts' one upsert statement (contact-upsert.ts, in external_id order), in
// batches, each committed on its own: a refused line is reported by its number and the others are kept.
// While batches are written (two statements at a time), the next one is read and validated, so reading
// and writing overlap while at most three batches are held.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../base/errors.ts';
import { MAX_JSON_DEPTH, tooDeepPath } from '../base/json-depth.ts';
import type { ContactImportResponse } from '../schemas/contacts.ts';
import { upsertContactCounts } from './contact-upsert.ts';
import type { ContactFields } from '../schemas/contacts.ts';
import { parseContactEntry } from './contacts.ts';

/** The largest import body: about a million contacts of 100 bytes. */
export const CONTACT_IMPORT_MAX_BYTES = 100 * 1024 * 1024;
/** Contacts per upsert statement: large enough that per-statement costs vanish, small enough to hold twice. */
const BATCH_CONTACTS = 5000;
/**
 * Batch statements in flight at once. Two statements that upsert the same contact wait for each other
 * (each writes in external_id order, so they cannot deadlock), and counts add up the same either way.
 */
const WRITE_LANES = 2;
/** Errors listed in the answer; `refused` counts them all. */
const LISTED_ERRORS = 100;
/** A longer line is refused unread (a contact object is far smaller). */
const MAX_LINE_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

interface Line {
  number: number;
  text: string | null;
}

/**
 * The lines of a byte stream, numbered from 1; `text` is null for a line over MAX_LINE_BYTES. Split on
 * the newline byte, which never occurs inside a multi-byte UTF-8 character, so a character cut between
 * chunks is decoded whole. Throws 413 once more than `maxBytes` have arrived.
 */
export async function* numberedLines(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<Line> {
  let total = 0;
  let number = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let overlong = false;
  const take = (tail: Buffer): Line => {
    number++;
    const text =
      overlong || pendingBytes + tail.length > MAX_LINE_BYTES
        ? null
        : Buffer.concat([...pending, tail]).toString('utf8');
    pending = [];
    pendingBytes = 0;
    overlong = false;
    return { number, text };
  };
  for await (const chunk of chunks) {
    total += chunk.byteLength;
    if (total > maxBytes) throw tooLarge(maxBytes);
    const buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (let cut = buffer.indexOf(NEWLINE, start); cut >= 0; cut = buffer.indexOf(NEWLINE, start)) {
      yield take(buffer.subarray(start, cut));
      start = cut + 1;
    }
    if (start < buffer.length) {
      const rest = buffer.subarray(start);
      if (overlong || pendingBytes + rest.length > MAX_LINE_BYTES) {
        overlong = true;
        pending = [];
        pendingBytes = 0;
      } else {
        // Copied: the stream may reuse the chunk's memory.
        pending.push(Buffer.from(rest));
        pendingBytes += rest.length;
      }
    }
  }
  if (pendingBytes > 0 || overlong) yield take(Buffer.alloc(0));
}

export function tooLarge(maxBytes: number): AppError {
  return new AppError(
    'payload_too_large',
    `An import is at most ${maxBytes} bytes; the lines before the limit were imported`,
  );
}

/** Imports contacts from NDJSON: created and updated counts, and the refused lines (the first 100 listed). */
export async function importContacts(
  em: EntityManager,
  tenantId: string,
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  maxBytes: number = CONTACT_IMPORT_MAX_BYTES,
): Promise<ContactImportResponse> {
  const result: ContactImportResponse = { created: 0, updated: 0, refused: 0, errors: [] };
  const refuse = (line: number, detail: string) => {
    result.refused++;
    if (result.errors.length < LISTED_ERRORS) result.errors.push({ line, detail });
  };
  let batch: ContactFields[] = [];
  const writing: Array<Promise<void>> = [];
  const write = async (contacts: ContactFields[]) => {
    const counts = await upsertContactCounts(em, tenantId, contacts);
    result.created += counts.created;
    result.updated += counts.updated;
  };
  try {
    for await (const line of numberedLines(chunks, maxBytes)) {
      if (line.text === null) {
        refuse(line.number, `(line): longer than ${MAX_LINE_BYTES} bytes`);
        continue;
      }
      if (line.text.trim() === '') continue;
      let entry: unknown;
      try {
        entry = JSON.parse(line.text);
      } catch (error) {
        refuse(line.number, `(line): malformed JSON: ${(error as Error).message}`);
        continue;
      }
      const deep = tooDeepPath(line.text, entry);
      if (deep) {
        refuse(line.number, `${deep.join('.')}: nested deeper than ${MAX_JSON_DEPTH} levels`);
        continue;
      }
      const parsed = parseContactEntry(entry);
      if ('detail' in parsed) {
        refuse(line.number, parsed.detail);
        continue;
      }
      batch.push(parsed.contact);
      if (batch.length >= BATCH_CONTACTS) {
        if (writing.length >= WRITE_LANES) await writing.shift();
        const written = write(batch);
        // Handled when awaited; until then a failure must not count as unhandled.
        written.catch(() => undefined);
        writing.push(written);
        batch = [];
      }
    }
    if (batch.length > 0) writing.push(write(batch));
  } finally {
    // Whatever ends the reading, the batches in flight settle before the answer (or the error) goes out.
    await Promise.allSettled(writing);
  }
  for (const written of writing) await written;
  return result;
}

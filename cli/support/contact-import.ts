// `herald contacts import FILE` for NDJSON and CSV: the file is streamed to POST /v1/contacts/import as
// it is read (CSV converted to NDJSON on the way), never held whole, with a progress bar of the bytes
// read on a terminal. The server numbers refused lines by NDJSON line; for CSV they are mapped back to
// the line of the file each record starts on.
import { closeSync, createReadStream, openSync, readSync, statSync } from 'node:fs';
import type { ContactImportResponse } from '../../server/schemas/contacts.ts';
import { csvContactsAsNdjson, csvRecords } from './csv.ts';
import { usageError } from './output.ts';
import { contacts } from './paths.ts';
import { progressBar } from './progress.ts';
import type { RemoteClient } from './remote.ts';

export type ImportFormat = 'ndjson' | 'csv';

/** NDJSON lines are sent in chunks of about this many bytes. */
const CHUNK_BYTES = 64 * 1024;

/** Record start lines by NDJSON line, grown as needed (4 bytes a record). */
class LineMap {
  #lines = new Uint32Array(1024);
  #count = 0;
  push(line: number): void {
    if (this.#count === this.#lines.length) {
      const grown = new Uint32Array(this.#lines.length * 2);
      grown.set(this.#lines);
      this.#lines = grown;
    }
    this.#lines[this.#count++] = line;
  }
  /** The CSV line of an NDJSON line (1-based). */
  of(ndjsonLine: number): number {
    return this.#lines[ndjsonLine - 1] ?? ndjsonLine;
  }
}

/** The file's first CSV record, read before anything is sent, so a bad header is a usage error. */
async function csvHeader(file: string): Promise<string[]> {
  const fd = openSync(file, 'r');
  const buffer = Buffer.alloc(64 * 1024);
  const read = readSync(fd, buffer, 0, buffer.length, 0);
  closeSync(fd);
  async function* once() {
    yield buffer.subarray(0, read).toString('utf8');
  }
  for await (const record of csvRecords(once())) return record.fields.map((f) => f.trim());
  return [];
}

export async function importContactsFile(
  client: RemoteClient,
  file: string,
  format: ImportFormat,
): Promise<ContactImportResponse> {
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw usageError(`${file} is not a file`);
    size = stat.size;
  } catch (error) {
    if ((error as { exitCode?: number }).exitCode !== undefined) throw error;
    throw usageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (format === 'csv' && !(await csvHeader(file)).includes('external_id'))
    throw usageError(`${file}: the CSV header (first line) must name an external_id column`);
  const progress = progressBar('importing');
  let read = 0;
  const lines = format === 'csv' ? new LineMap() : null;
  async function* fileChunks(): AsyncGenerator<Uint8Array> {
    const stream = createReadStream(file);
    if (format === 'ndjson') {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        read += chunk.length;
        progress.update(read, size);
        yield chunk;
      }
      return;
    }
    let pending = '';
    const text = decodeUtf8(stream as AsyncIterable<Buffer>, (bytes) => progress.update((read += bytes), size));
    for await (const ndjson of csvContactsAsNdjson(text, (line) => lines!.push(line))) {
      pending += ndjson;
      if (pending.length >= CHUNK_BYTES) {
        yield Buffer.from(pending, 'utf8');
        pending = '';
      }
    }
    if (pending) yield Buffer.from(pending, 'utf8');
  }
  try {
    const result = await client.call<ContactImportResponse>('POST', contacts.import(), {
      stream: { contentType: 'application/x-ndjson', chunks: fileChunks() },
    });
    if (lines) result.errors = result.errors.map((e) => ({ ...e, line: lines.of(e.line) }));
    return result;
  } finally {
    progress.finish();
  }
}

/** Text from a byte stream, decoded across chunk boundaries; `onBytes` hears each chunk's size. */
async function* decodeUtf8(stream: AsyncIterable<Buffer>, onBytes: (bytes: number) => void): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8');
  for await (const chunk of stream) {
    onBytes(chunk.length);
    yield decoder.decode(chunk, { stream: true });
  }
  const rest = decoder.decode();
  if (rest) yield rest;
}

// The opaque cursor of a paged list: the last item's id, base64url-encoded.
import { invalidField } from './errors.ts';

export function encodeCursor(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

/** The id a cursor carries; a cursor that does not carry an id answers 422 on the `cursor` query field. */
export function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id))
    throw invalidField(['query', 'cursor'], 'invalid cursor');
  return id;
}

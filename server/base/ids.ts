// Identifiers. Rows get UUIDv7 ids: random enough to be unguessable across tenants, and ordered by
// creation time, so cursor paging over ids follows creation order without an extra column.
import { fillRandom } from './random-pool.ts';

// Within one process ids are strictly increasing: in the same millisecond the 12-bit rand_a field is a
// counter (RFC 9562, method 1), so two items created together still list in creation order.
let lastMs = 0;
let sequence = 0;

/** The id being made: written over in place for each id (its hex string is what leaves). */
const bytes = Buffer.alloc(16);

export function newId(now: number = Date.now()): string {
  fillRandom(bytes, 0, 16);
  if (now <= lastMs) {
    sequence++;
    if (sequence > 0xfff) {
      lastMs++; // counter exhausted: borrow the next millisecond
      sequence = 0;
    }
  } else {
    lastMs = now;
    sequence = bytes.readUInt16BE(6) & 0x3ff; // random start, leaving room to count up
  }
  bytes.writeUIntBE(lastMs, 0, 6);
  bytes[6] = 0x70 | (sequence >> 8); // version 7 + counter high bits
  bytes[7] = sequence & 0xff;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The lowest id of any row created at `ms` or later (ids are UUIDv7: their first 48 bits are the
 * creation millisecond), so `id < idFloor(t)` selects by creation time through the primary key.
 */
export function idFloor(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

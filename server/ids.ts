// Identifiers. Rows get UUIDv7 ids: random enough to be unguessable across tenants, and ordered by
// creation time, so cursor paging over ids follows creation order without an extra column.
import { randomFillSync } from 'node:crypto';

// Within one process ids are strictly increasing: in the same millisecond the 12-bit rand_a field is a
// counter (RFC 9562, method 1), so two items created together still list in creation order.
let lastMs = 0;
let sequence = 0;

// Random bytes are drawn from the CSPRNG 4 KiB at a time (as crypto.randomUUID does), since a call
// per id is a measurable share of a delivery worker's CPU. Each id takes the next 16 bytes of the pool
// and writes its timestamp and version bits over them in place: they are never read again.
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let poolOffset = POOL_SIZE;

export function newId(now: number = Date.now()): string {
  if (poolOffset + 16 > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += 16;
  if (now <= lastMs) {
    sequence++;
    if (sequence > 0xfff) {
      lastMs++; // counter exhausted: borrow the next millisecond
      sequence = 0;
    }
  } else {
    lastMs = now;
    sequence = pool.readUInt16BE(at + 6) & 0x3ff; // random start, leaving room to count up
  }
  pool.writeUIntBE(lastMs, at, 6);
  pool[at + 6] = 0x70 | (sequence >> 8); // version 7 + counter high bits
  pool[at + 7] = sequence & 0xff;
  pool[at + 8] = (pool[at + 8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = pool.toString('hex', at, at + 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

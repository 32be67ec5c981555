// Random bytes for the hot paths that need a few per item (ids, web push salts), drawn from the
// system's CSPRNG 4 KiB at a time, as crypto.randomUUID does: a call to the generator per item was a
// measurable share of a delivery worker's CPU. No byte is handed out twice.
import { randomFillSync } from 'node:crypto';

const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

/** Writes `length` (at most 4096) fresh random bytes into `target` from `at` on. */
export function fillRandom(target: Buffer, at: number, length: number): void {
  if (offset + length > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  pool.copy(target, at, offset, offset + length);
  offset += length;
}

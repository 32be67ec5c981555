// Row ids: UUIDv7, time-ordered, and strictly increasing within a process even in one millisecond.
import { describe, expect, it } from 'vitest';
import { isUuid, newId } from '../../server/base/ids.ts';

describe('newId', () => {
  it('is a version 7 UUID with the RFC variant', () => {
    const id = newId();
    expect(isUuid(id)).toBe(true);
    expect(id[14]).toBe('7');
    expect(['8', '9', 'a', 'b']).toContain(id[19]);
  });

  it('sorts in creation order, also for many ids in the same millisecond', () => {
    const now = Date.now() + 10_000;
    const ids = Array.from({ length: 5000 }, () => newId(now));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('embeds the creation time', () => {
    const now = Date.now() + 20_000;
    const id = newId(now);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(now);
  });
});

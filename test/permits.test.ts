// The delivery worker's permits (delivery/permits.ts): how many batched runs of a process use the
// database at once, with batches that carry a trigger's job served before broadcast-only batches (whose
// jobs are marked bulk: broadcasts.test.ts).
import { describe, expect, it } from 'vitest';
import { Permits } from '../server/delivery/permits.ts';

/** A piece of work that runs until released, recording when it started. */
function gatedWork(log: string[], name: string): { work: () => Promise<string>; release: () => void } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  return {
    work: async () => {
      log.push(name);
      await released;
      return name;
    },
    release,
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('Permits', () => {
  it('runs at most its size at once, and the rest as permits free', async () => {
    const permits = new Permits(2);
    const started: string[] = [];
    const works = ['a', 'b', 'c', 'd'].map((name) => gatedWork(started, name));
    const results = works.map((w) => permits.run(false, w.work));
    await tick();
    expect(started).toEqual(['a', 'b']);
    works[1]!.release();
    await tick();
    expect(started).toEqual(['a', 'b', 'c']);
    for (const w of works) w.release();
    expect(await Promise.all(results)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('hands a freed permit to an urgent waiter before earlier bulk waiters', async () => {
    const permits = new Permits(1);
    const started: string[] = [];
    const first = gatedWork(started, 'first');
    const bulk1 = gatedWork(started, 'bulk1');
    const bulk2 = gatedWork(started, 'bulk2');
    const urgent = gatedWork(started, 'urgent');
    const runs = [permits.run(false, first.work), permits.run(false, bulk1.work), permits.run(false, bulk2.work), permits.run(true, urgent.work)];
    await tick();
    first.release();
    await tick();
    expect(started).toEqual(['first', 'urgent']);
    urgent.release();
    await tick();
    expect(started).toEqual(['first', 'urgent', 'bulk1']);
    bulk1.release();
    bulk2.release();
    await Promise.all(runs);
    expect(started).toEqual(['first', 'urgent', 'bulk1', 'bulk2']);
  });

  it('frees the permit of a work that fails, and passes the failure on', async () => {
    const permits = new Permits(1);
    await expect(permits.run(true, () => Promise.reject(new Error('store failed')))).rejects.toThrow('store failed');
    expect(await permits.run(false, async () => 'next')).toBe('next');
  });

  it('refuses a size that is not a positive integer', () => {
    for (const size of [0, -1, 1.5, Number.NaN]) expect(() => new Permits(size)).toThrow(/positive integer/);
  });
});

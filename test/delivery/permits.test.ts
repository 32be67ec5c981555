// The delivery worker's permits (delivery/permits.ts): how many batched runs of a process use the
// database at once, with a fetched batch's triggers' jobs run apart from its broadcast jobs (marked
// bulk: broadcasts.test.ts) and served first, the broadcast jobs within their share.
import { describe, expect, it } from 'vitest';
import { Permits } from '../../server/delivery/permits.ts';
import { inboxStorePermitCount, splitByUrgency } from '../../server/jobs/deliver-event.ts';
import { availableParallelism } from 'node:os';
import { ConfigError, loadConfig } from '../../server/base/config.ts';
import { testTempDir } from '../support/tmp.ts';

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
    const permits = new Permits(2, { bulkPatienceMs: 10_000 });
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
    const permits = new Permits(1, { bulkPatienceMs: 10_000 });
    const started: string[] = [];
    const first = gatedWork(started, 'first');
    const bulk1 = gatedWork(started, 'bulk1');
    const bulk2 = gatedWork(started, 'bulk2');
    const urgent = gatedWork(started, 'urgent');
    const runs = [
      permits.run(false, first.work),
      permits.run(false, bulk1.work),
      permits.run(false, bulk2.work),
      permits.run(true, urgent.work),
    ];
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
    const permits = new Permits(1, { bulkPatienceMs: 10_000 });
    await expect(permits.run(true, () => Promise.reject(new Error('store failed')))).rejects.toThrow('store failed');
    expect(await permits.run(false, async () => 'next')).toBe('next');
  });

  it('refuses a size that is not a positive integer, and a bulk share outside 1 to the size', () => {
    for (const size of [0, -1, 1.5, Number.NaN])
      expect(() => new Permits(size, { bulkPatienceMs: 1 })).toThrow(/positive integer/);
    for (const bulkSize of [0, 3, 1.5])
      expect(() => new Permits(2, { bulkPatienceMs: 1, bulkSize })).toThrow(/bulkSize/);
  });

  it('runs at most bulkSize bulk works at once, keeping the rest for urgent work', async () => {
    const permits = new Permits(3, { bulkPatienceMs: 10_000, bulkSize: 2 });
    const started: string[] = [];
    const bulk = [1, 2, 3, 4].map((n) => gatedWork(started, `bulk${n}`));
    const runs: Array<Promise<string>> = bulk.map((w) => permits.run(false, w.work));
    await tick();
    expect(started).toEqual(['bulk1', 'bulk2']); // a permit is free, but bulk work has its share
    const urgent = [1, 2].map((n) => gatedWork(started, `urgent${n}`));
    runs.push(permits.run(true, urgent[0]!.work));
    await tick();
    expect(started).toEqual(['bulk1', 'bulk2', 'urgent1']); // at once, on the permit kept free
    urgent[0]!.release();
    await tick();
    expect(started).toEqual(['bulk1', 'bulk2', 'urgent1']); // the freed permit is not bulk work's to take
    runs.push(permits.run(true, urgent[1]!.work));
    await tick();
    expect(started).toEqual(['bulk1', 'bulk2', 'urgent1', 'urgent2']);
    bulk[0]!.release(); // a bulk work ends: the next bulk waiter takes its place in the share
    await tick();
    expect(started).toEqual(['bulk1', 'bulk2', 'urgent1', 'urgent2', 'bulk3']);
    for (const w of [...bulk, ...urgent]) w.release();
    expect(await Promise.all(runs)).toEqual(['bulk1', 'bulk2', 'bulk3', 'bulk4', 'urgent1', 'urgent2']);
    expect(started).toEqual(['bulk1', 'bulk2', 'urgent1', 'urgent2', 'bulk3', 'bulk4']);
  });

  it('lets urgent work pass a bulk waiter only until that one has waited its patience', async () => {
    let now = 0;
    const permits = new Permits(1, { bulkPatienceMs: 1000, now: () => now });
    const started: string[] = [];
    const running = gatedWork(started, 'running');
    const bulk = gatedWork(started, 'bulk');
    const urgent = [1, 2, 3].map((n) => gatedWork(started, `urgent${n}`));
    const runs = [
      permits.run(true, running.work),
      permits.run(false, bulk.work),
      permits.run(true, urgent[0]!.work),
      permits.run(true, urgent[1]!.work),
    ];
    await tick();
    now = 999; // the bulk waiter is still within its patience: urgent work goes first
    running.release();
    await tick();
    expect(started).toEqual(['running', 'urgent1']);
    runs.push(permits.run(true, urgent[2]!.work));
    now = 1000; // now it is not: it goes next, ahead of the urgent work that keeps coming
    urgent[0]!.release();
    await tick();
    expect(started).toEqual(['running', 'urgent1', 'bulk']);
    bulk.release();
    await tick();
    expect(started).toEqual(['running', 'urgent1', 'bulk', 'urgent2']);
    urgent[1]!.release();
    urgent[2]!.release();
    await Promise.all(runs);
    expect(started).toEqual(['running', 'urgent1', 'bulk', 'urgent2', 'urgent3']);
  });
});

describe("a fetched batch's inbox runs", () => {
  it("are its triggers' jobs (urgent, with the jobs enqueued before jobs were marked) and its broadcasts' jobs, apart", () => {
    const broadcast = (id: string) => ({ data: { event_ids: [id], bulk: true as const } });
    const trigger = { data: { event_ids: ['t'] } };
    const old = { data: { event_id: 'old' } };
    expect(splitByUrgency([broadcast('b1'), broadcast('b2')])).toEqual([
      { urgent: false, jobs: [broadcast('b1'), broadcast('b2')] },
    ]);
    expect(splitByUrgency([trigger, broadcast('b1'), old, broadcast('b2')])).toEqual([
      { urgent: true, jobs: [trigger, old] },
      { urgent: false, jobs: [broadcast('b1'), broadcast('b2')] },
    ]);
    expect(splitByUrgency([old])).toEqual([{ urgent: true, jobs: [old] }]);
    expect(splitByUrgency([])).toEqual([]);
  });
});

describe('how many inbox batches a worker process stores at once', () => {
  const config = (values: Record<string, number>) => loadConfig({ dataDir: testTempDir('permits-'), ...values }, {});

  it('is the cores plus one unless inboxStoreConcurrency says, and never more than workerConcurrency', () => {
    expect(inboxStorePermitCount(config({ workerConcurrency: 64 }))).toBe(Math.min(64, availableParallelism() + 1));
    expect(inboxStorePermitCount(config({ workerConcurrency: 8, inboxStoreConcurrency: 3 }))).toBe(3);
    expect(inboxStorePermitCount(config({ workerConcurrency: 4, inboxStoreConcurrency: 16 }))).toBe(4);
    expect(() => config({ inboxStoreConcurrency: 0 })).toThrow(ConfigError);
  });
});

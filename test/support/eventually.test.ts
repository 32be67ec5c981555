// eventually() is what every waiting test relies on: it must return as soon as the condition holds and
// fail, with the check's own error, when it never does.
import { describe, expect, it } from 'vitest';
import { eventually } from './eventually.ts';

describe('eventually', () => {
  it('resolves with the value once the check stops returning false', async () => {
    let calls = 0;
    const value = await eventually(() => (++calls >= 3 ? 'ready' : false), { intervalMs: 1 });
    expect(value).toBe('ready');
    expect(calls).toBe(3);
  });

  it('treats an assertion that stops throwing as holding', async () => {
    let n = 0;
    await eventually(() => expect(++n).toBeGreaterThan(2), { intervalMs: 1 });
    expect(n).toBe(3);
  });

  it('fails with the last error the check threw, prefixed by the message', async () => {
    let n = 0;
    const failure = eventually(
      () => {
        throw new Error(`attempt ${++n}`);
      },
      { timeoutMs: 30, intervalMs: 5, message: 'never ready' },
    );
    await expect(failure).rejects.toThrow(/^never ready: attempt \d+$/);
    expect(n).toBeGreaterThan(1);
  });

  it('fails with the message when the condition stays false', async () => {
    await expect(eventually(() => false, { timeoutMs: 20, intervalMs: 5, message: 'still false' })).rejects.toThrow(
      'still false',
    );
  });
});

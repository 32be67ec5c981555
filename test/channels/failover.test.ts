// Failover across a channel's providers (server/channels/failover.ts) on a manual clock: the order
// providers are asked in, what a permanent failure stops, when a circuit opens, probes and closes,
// and how a Retry-After pauses one provider without touching another.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/base/clock.ts';
import type { Context } from '../../server/base/context.ts';
import {
  FAILURES_TO_OPEN,
  OPEN_MS,
  retryAfterMs,
  sendWithFailover,
  type ProviderAnswer,
  type ProviderCandidate,
} from '../../server/channels/failover.ts';

function runtimeWith(clock: ManualClock): Context {
  return { clock } as unknown as Context;
}

/** A provider that answers from a script, and counts how often it was asked. */
function provider(name: string, answer: () => ProviderAnswer): ProviderCandidate & { asked: number } {
  const candidate = {
    provider: name,
    circuitKey: `tenant-1:sms:${name}`,
    asked: 0,
    send: async () => {
      candidate.asked += 1;
      return answer();
    },
  };
  return candidate;
}

const sent = (): ProviderAnswer => ({ status: 'sent', providerMessageId: 'm-1' });
const down = (): ProviderAnswer => ({ status: 'failed', error: 'HTTP 503', retryable: true });

describe('sendWithFailover', () => {
  it('sends through the first provider that takes the message, recording each one asked', async () => {
    const clock = new ManualClock(Date.parse('2026-12-01T10:00:00Z'));
    const primary = provider('twilio', down);
    const fallback = provider('vonage', sent);
    const outcome = await sendWithFailover(runtimeWith(clock), [primary, fallback]);
    expect(outcome).toEqual({
      status: 'sent',
      providerMessageId: 'm-1',
      provider: 'vonage',
      providerAttempts: [
        { at: '2026-12-01T10:00:00.000Z', provider: 'twilio', outcome: 'failed', error: 'HTTP 503' },
        { at: '2026-12-01T10:00:00.000Z', provider: 'vonage', outcome: 'sent', error: null },
      ],
    });
  });

  it('stops at a permanent failure: another provider would refuse the same message', async () => {
    const runtime = runtimeWith(new ManualClock());
    const primary = provider('twilio', () => ({ status: 'failed', error: 'invalid number', retryable: false }));
    const fallback = provider('vonage', sent);
    const outcome = await sendWithFailover(runtime, [primary, fallback]);
    expect(outcome).toMatchObject({ status: 'failed', retryable: false, provider: 'twilio', error: 'invalid number' });
    expect(fallback.asked).toBe(0);
  });

  it('answers a retryable failure naming the last provider when every one fails, and counts a thrown error as one', async () => {
    const runtime = runtimeWith(new ManualClock());
    const primary = provider('twilio', () => {
      throw new Error('connect ECONNREFUSED');
    });
    const fallback = provider('vonage', down);
    const outcome = await sendWithFailover(runtime, [primary, fallback]);
    expect(outcome).toMatchObject({
      status: 'failed',
      retryable: true,
      provider: 'vonage',
      error: 'every provider failed; last: vonage: HTTP 503',
    });
    if (outcome.status !== 'failed') throw new Error('unreachable');
    expect(outcome.providerAttempts?.map((a) => [a.provider, a.outcome, a.error])).toEqual([
      ['twilio', 'failed', 'connect ECONNREFUSED'],
      ['vonage', 'failed', 'HTTP 503'],
    ]);
  });

  it('opens a circuit after five failures in a row, probes once after 30 s, and closes it on success', async () => {
    const clock = new ManualClock();
    const runtime = runtimeWith(clock);
    let primaryUp = false;
    const primary = provider('twilio', () => (primaryUp ? sent() : down()));
    const fallback = provider('vonage', sent);
    for (let i = 0; i < FAILURES_TO_OPEN; i++) await sendWithFailover(runtime, [primary, fallback]);
    expect(primary.asked).toBe(FAILURES_TO_OPEN);

    // Open: passed over without being asked, and the trail says why.
    const skipped = await sendWithFailover(runtime, [primary, fallback]);
    expect(primary.asked).toBe(FAILURES_TO_OPEN);
    if (skipped.status !== 'sent') throw new Error(`expected sent, got ${skipped.status}`);
    expect(skipped.providerAttempts?.[0]).toMatchObject({ provider: 'twilio', outcome: 'skipped' });
    expect(skipped.providerAttempts?.[0]?.error).toMatch(/circuit open/);

    // Still open just before the 30 s are up; a failed probe opens it for another 30 s.
    clock.advance(OPEN_MS - 1);
    await sendWithFailover(runtime, [primary, fallback]);
    expect(primary.asked).toBe(FAILURES_TO_OPEN);
    clock.advance(1);
    await sendWithFailover(runtime, [primary, fallback]);
    expect(primary.asked).toBe(FAILURES_TO_OPEN + 1);
    await sendWithFailover(runtime, [primary, fallback]);
    expect(primary.asked).toBe(FAILURES_TO_OPEN + 1);

    // A successful probe closes it: asked every time again.
    clock.advance(OPEN_MS);
    primaryUp = true;
    expect(await sendWithFailover(runtime, [primary, fallback])).toMatchObject({ status: 'sent', provider: 'twilio' });
    expect(await sendWithFailover(runtime, [primary, fallback])).toMatchObject({ status: 'sent', provider: 'twilio' });
    expect(primary.asked).toBe(FAILURES_TO_OPEN + 3);
  });

  it('lets one probe out at a time while a circuit reopens', async () => {
    const clock = new ManualClock();
    const runtime = runtimeWith(clock);
    let release: (answer: ProviderAnswer) => void = () => undefined;
    let slow = false;
    const primary = provider('twilio', down);
    const probing: ProviderCandidate = {
      provider: 'twilio',
      circuitKey: primary.circuitKey,
      send: () => (slow ? new Promise<ProviderAnswer>((resolve) => (release = resolve)) : primary.send()),
    };
    const fallback = provider('vonage', sent);
    for (let i = 0; i < FAILURES_TO_OPEN; i++) await sendWithFailover(runtime, [probing, fallback]);
    clock.advance(OPEN_MS);
    slow = true;
    const probe = sendWithFailover(runtime, [probing, fallback]);
    // While the probe is out, the next message goes to the fallback.
    expect(await sendWithFailover(runtime, [probing, fallback])).toMatchObject({ provider: 'vonage' });
    release(sent());
    expect(await probe).toMatchObject({ status: 'sent', provider: 'twilio' });
  });

  it('pauses a provider for its Retry-After, on that key only, and asks it again afterwards', async () => {
    const clock = new ManualClock();
    const runtime = runtimeWith(clock);
    let limited = true;
    const slack = provider('slack', () =>
      limited ? { status: 'failed', error: 'HTTP 429', retryable: true, retryAfterMs: 2_000 } : sent(),
    );
    const otherTenant = { ...provider('slack', sent), circuitKey: 'tenant-2:chat:slack' };
    const start = clock.now();
    expect(await sendWithFailover(runtime, [slack])).toMatchObject({
      status: 'failed',
      retryable: true,
      retryAt: start + 2_000,
    });
    limited = false;
    clock.advance(500);
    const paused = await sendWithFailover(runtime, [slack]);
    expect(paused).toMatchObject({ status: 'failed', retryable: true, retryAt: start + 2_000 });
    expect(slack.asked).toBe(1);
    expect(await sendWithFailover(runtime, [otherTenant])).toMatchObject({ status: 'sent' });
    clock.advance(1_500);
    expect(await sendWithFailover(runtime, [slack])).toMatchObject({ status: 'sent' });
  });

  it('waits for the earliest pause only when every provider is paused; another failure leaves it to the retries', async () => {
    const clock = new ManualClock();
    const runtime = runtimeWith(clock);
    const limitedFor = (ms: number) => (): ProviderAnswer => ({
      status: 'failed',
      error: 'HTTP 429',
      retryable: true,
      retryAfterMs: ms,
    });
    const start = clock.now();
    const both = await sendWithFailover(runtime, [
      provider('twilio', limitedFor(5_000)),
      provider('vonage', limitedFor(1_000)),
    ]);
    expect(both).toMatchObject({ status: 'failed', retryable: true, retryAt: start + 1_000 });
    const pausedThenDown = await sendWithFailover(runtime, [
      { ...provider('slack', limitedFor(1_000)), circuitKey: 'tenant-1:chat:a' },
      { ...provider('telegram', down), circuitKey: 'tenant-1:chat:b' },
    ]);
    expect(pausedThenDown).toMatchObject({ status: 'failed', retryable: true });
    expect(pausedThenDown).not.toHaveProperty('retryAt');
    expect(await sendWithFailover(runtime, [provider('smtp', down)])).not.toHaveProperty('retryAt');
  });

  it('asks the last provider despite its open circuit when no other was asked: no attempt without a send', async () => {
    const clock = new ManualClock();
    const runtime = runtimeWith(clock);
    let up = false;
    const only = provider('smtp', () => (up ? sent() : down()));
    for (let i = 0; i < FAILURES_TO_OPEN + 3; i++) await sendWithFailover(runtime, [only]);
    expect(only.asked).toBe(FAILURES_TO_OPEN + 3);
    up = true;
    expect(await sendWithFailover(runtime, [only])).toMatchObject({ status: 'sent', provider: 'smtp' });
    // With a fallback left to ask, the open circuit is passed over as before.
    const primary = provider('twilio', down);
    const fallback = provider('vonage', sent);
    for (let i = 0; i < FAILURES_TO_OPEN; i++) await sendWithFailover(runtime, [primary, fallback]);
    await sendWithFailover(runtime, [primary, fallback]);
    expect(primary.asked).toBe(FAILURES_TO_OPEN);
  });

  it("does not count one message's temporary refusal (an SMTP 4xx to a recipient) towards the circuit", async () => {
    const runtime = runtimeWith(new ManualClock());
    const refused = (): ProviderAnswer => ({
      status: 'failed',
      error: '452 4.2.2 mailbox full',
      retryable: true,
      messageFault: true,
    });
    let answer = refused;
    const primary = provider('smtp', () => answer());
    const fallback = provider('smtp-fallback', sent);
    for (let i = 0; i < FAILURES_TO_OPEN + 2; i++)
      expect(await sendWithFailover(runtime, [primary, fallback])).toMatchObject({ provider: 'smtp-fallback' });
    expect(primary.asked).toBe(FAILURES_TO_OPEN + 2);
    // Its own faults still open it.
    answer = down;
    for (let i = 0; i < FAILURES_TO_OPEN; i++) await sendWithFailover(runtime, [primary, fallback]);
    await sendWithFailover(runtime, [primary, fallback]);
    expect(primary.asked).toBe(2 * FAILURES_TO_OPEN + 2);
  });

  it('skips the delivery when there is no provider to ask', async () => {
    expect(await sendWithFailover(runtimeWith(new ManualClock()), [])).toEqual({
      status: 'skipped',
      reason: 'no_transport',
    });
  });
});

describe('retryAfterMs', () => {
  it('reads seconds and HTTP dates, and caps them at an hour', () => {
    const now = Date.parse('2026-12-01T10:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3_000);
    expect(retryAfterMs(['1.5'], now)).toBe(1_500);
    expect(retryAfterMs('Tue, 01 Dec 2026 10:00:10 GMT', now)).toBe(10_000);
    expect(retryAfterMs('86400', now)).toBe(3_600_000);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });
});

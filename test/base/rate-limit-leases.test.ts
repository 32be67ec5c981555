// The trigger budget's per-process lease (server/base/rate-limit.ts), with an injected clock: tokens are
// charged ahead only under concurrent takes, held while takes keep coming, and given back to the
// bucket once the process has not drawn on them for 100 ms. Across processes: test/app/scale-out.test.ts.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { ManualClock } from '../../server/base/clock.ts';
import {
  createTenantFixture,
  insertNotificationType,
  setTriggerLimit,
  sqlOne,
  type TenantFixture,
} from '../support/fixtures.ts';

let app: TestApp;
const clock = new ManualClock(Date.parse('2026-06-01T12:00:00Z'));

beforeAll(async () => {
  app = await startTestApp({ clock });
});
afterAll(async () => {
  await app?.close();
});

/** A tenant allowed 1 trigger per minute with the given burst (the clock stands still: no refill). */
async function limitedTenant(name: string, burst: number): Promise<TenantFixture> {
  const tenant = await createTenantFixture(app, name);
  await insertNotificationType(app, tenant.tenantId, { key: 'plain' });
  await setTriggerLimit(app, tenant.tenantId, 1, burst);
  return tenant;
}

const trigger = (tenant: TenantFixture, recipient: string) =>
  app.request('POST', '/v1/notifications', {
    token: tenant.serviceKey,
    body: { type: 'plain', recipients: [recipient] },
  });
const bucketOf = async (tenant: TenantFixture) =>
  Number(
    (await sqlOne<{ tokens: number }>(app, `SELECT tokens FROM rate_limit_buckets WHERE key = $1`, [
      `trigger:${tenant.tenantId}`,
    ]))!.tokens,
  );

describe('the trigger budget leased per process', () => {
  it('charges nothing ahead for one trigger at a time', async () => {
    const tenant = await limitedTenant('Lone', 200);
    for (let i = 0; i < 5; i++) {
      expect((await trigger(tenant, `lone${i}`)).status).toBe(202);
      expect(await bucketOf(tenant)).toBe(199 - i);
    }
  });

  it('holds tokens charged ahead of concurrent triggers, and gives back what it did not grant after 100 ms idle', async () => {
    const tenant = await limitedTenant('Busy', 200);
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => trigger(tenant, `busy${i}`)));
    expect(results.map((r) => r.status)).toEqual(Array(30).fill(202));
    // A top-up the last grants started may still be on its way to the bucket: let it land.
    await new Promise((resolve) => setTimeout(resolve, 250));
    // Held: the bucket gave more than the 30 granted (at most a tenth of the burst more).
    const held = 170 - (await bucketOf(tenant));
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThanOrEqual(20);
    // The clock stands still, so the lease is not idle yet: still held.
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await bucketOf(tenant)).toBe(170 - held);
    clock.advance(100);
    await vi.waitFor(async () => expect(await bucketOf(tenant)).toBe(170), { timeout: 5_000, interval: 50 });
    // Nothing was lost: the next wave gets exactly the 170 left.
    const next = await Promise.all(Array.from({ length: 200 }, (_, i) => trigger(tenant, `next${i}`)));
    expect(next.filter((r) => r.status === 202)).toHaveLength(170);
  });
});

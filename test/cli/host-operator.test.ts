// The host operator's credential (server/app/in-process-api.ts): the CLI's local mode reaches the
// routes with it in its own process, as one tenant with a service key's rights, audited as the CLI; no
// request over a real port can present it, even to a process that has one open.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openInProcessApi, IN_PROCESS_ORIGIN } from '../../server/app/in-process-api.ts';
import { query } from '../../server/base/db/sql.ts';
import { cliActor } from '../../server/resources/audit-log.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';

let app: TestApp;
let acme: TenantFixture;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
});
afterAll(async () => {
  await app?.close();
});

const inProcess = (api: ReturnType<typeof openInProcessApi>, method: string, path: string, body?: unknown) =>
  api.fetch(
    new Request(IN_PROCESS_ORIGIN + path, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );

describe('the host-operator credential', () => {
  it("acts for its tenant on management routes, and the route audits the write as the host's account", async () => {
    const api = openInProcessApi(app.runtime, acme.tenantId);
    try {
      const listed = await inProcess(api, 'GET', '/v1/brandings');
      expect(listed.status).toBe(200);
      expect((await listed.json()).map((b: { key: string }) => b.key)).toEqual(['default']);
      const created = await inProcess(api, 'POST', '/v1/brandings', { key: 'shop', values: { name: 'Shop' } });
      expect(created.status, await created.clone().text()).toBe(201);
      const entries = await query(
        app.runtime.orm.em.fork(),
        `SELECT actor_kind, actor_id, target_kind, target_id FROM audit_log WHERE tenant_id = $1 AND action = 'brand.create'`,
        [acme.tenantId],
      );
      expect(entries).toEqual([
        { actor_kind: 'cli', actor_id: cliActor().id, target_kind: 'brand', target_id: 'shop' },
      ]);
    } finally {
      api.close();
    }
    expect((await inProcess(api, 'GET', '/v1/brandings')).status).toBe(401);
  });

  it('answers 401 over a real port to anything resembling it, while one is open in the same process', async () => {
    const api = openInProcessApi(app.runtime, acme.tenantId);
    try {
      for (const token of ['host_', `host_${'A'.repeat(43)}`, 'host_x', 'HOST_abc', 'host']) {
        const res = await fetch(`${app.url}/v1/brandings`, { headers: { authorization: `Bearer ${token}` } });
        expect(res.status, token).toBe(401);
      }
    } finally {
      api.close();
    }
  });
});

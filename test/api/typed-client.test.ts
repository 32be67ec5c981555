// A client generated the usual way compiles and works: types from the live /v1/openapi.json by
// openapi-typescript with its default options, a small openapi-fetch client (test/typed-client/client.ts:
// trigger, event status, inbox) compiled with the project's TypeScript under --strict, then run
// against the live server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** What test/typed-client/client.ts exports (that file is compiled only beside its generated types). */
interface TypedClient {
  run(
    baseUrl: string,
    serviceKey: string,
    externalId: string,
  ): Promise<{ status: string; inbox: { unread_count: number; items: Array<{ title: string }> } }>;
}

let app: TestApp;
let acme: TenantFixture;
let dir: string;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app);
  // Inside the repository, so that the client resolves openapi-fetch from its node_modules.
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  dir = mkdtempSync(join(ROOT, '.tmp', 'typed-client-'));
});
afterAll(async () => {
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a client generated from /v1/openapi.json', () => {
  it('compiles under tsc --strict and triggers, reads the event status and lists the inbox', async () => {
    const document = await app.request('GET', '/v1/openapi.json');
    expect(document.status).toBe(200);
    writeFileSync(join(dir, 'api.ts'), astToString(await openapiTS(document.body)));
    copyFileSync(new URL('../typed-client/client.ts', import.meta.url), join(dir, 'client.ts'));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'es2023',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          lib: ['es2023', 'dom'],
          types: [],
          allowImportingTsExtensions: true,
        },
        files: ['client.ts', 'api.ts'],
      }),
    );
    const compiled = await promisify(execFile)(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json')], {
      cwd: dir,
    }).catch((error: { stdout: string; stderr: string }) => error);
    expect(`${compiled.stdout}${compiled.stderr}`).toBe('');

    const client = (await import(pathToFileURL(join(dir, 'client.ts')).href)) as TypedClient;
    const result = await client.run(app.url, acme.serviceKey, 'typed-client-ann');
    expect(result.status).toBe('delivered');
    expect(result.inbox.unread_count).toBe(1);
    expect(result.inbox.items.map((item) => item.title)).toEqual(['Order A-1001 shipped']);
    // tsc over the generated types takes tens of seconds of CPU on a loaded machine.
  }, 300_000);
});

// One exit code rule for every command (the real bin/herald, locally and remotely): 1 for an error
// Herald answered (any status, a 422 included), 2 for a usage error the CLI found before asking; with
// --json, the error is a JSON object on stderr.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { runCli } from '../support/cli.ts';
import { createTenantFixture, type TenantFixture } from '../support/fixtures.ts';

// Every CLI call starts a Node process; allow for a loaded machine.
vi.setConfig({ testTimeout: 120_000 });

let app: TestApp;
let acme: TenantFixture;
let remote: Record<string, string | undefined>;
let local: Record<string, string | undefined>;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createTenantFixture(app, 'Acme');
  remote = { HERALD_URL: app.url, HERALD_API_KEY: acme.serviceKey };
  local = {
    DATABASE_URL: app.database.url,
    HERALD_ENCRYPTION_KEYS: app.config.encryptionKeys,
    HERALD_HOME: app.dataDir,
    HERALD_LOG_LEVEL: 'error',
    HERALD_URL: undefined,
    HERALD_API_KEY: undefined,
  };
});
afterAll(async () => {
  await app?.close();
});

/** The commands of issue #56: each sends what the API refuses with 422. */
const refusedByTheApi: Array<[string, string[]]> = [
  ['topics create with a bad key', ['topics', 'create', 'Bad Key']],
  [
    'transports email set with a bad host',
    ['transports', 'email', 'set', '--host', 'no such host', '--port', '587', '--from-email', 'ops@acme.test'],
  ],
  ['send of an unknown type', ['send', '--type', 'nope', '--to', 'ann']],
];

describe('exit codes', () => {
  it.each(refusedByTheApi)('%s exits 1 remotely, as an error the API answered', async (_name, args) => {
    const res = await runCli(args, { env: remote });
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr).toMatch(/^herald: HTTP 422: /);
  });

  it('exits 1 locally too for what the routes refuse', async () => {
    const res = await runCli(['topics', 'create', 'Bad Key', '--tenant', acme.tenantId], { env: local });
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr).toMatch(/^herald: .*key/);
  });

  it('with --json, an error answered by the API is a JSON object on stderr: message, exit code, status, detail', async () => {
    const res = await runCli(['topics', 'create', 'Bad Key', '--json'], { env: remote });
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    const { error } = JSON.parse(res.stderr);
    expect(error).toEqual({
      message: expect.stringMatching(/^HTTP 422: body\.key: /),
      exit_code: 1,
      status: 422,
      detail: [expect.objectContaining({ loc: ['body', 'key'] })],
    });
    const unknownType = await runCli(['send', '--type', 'nope', '--to', 'ann', '--json'], { env: remote });
    expect(JSON.parse(unknownType.stderr).error).toMatchObject({ exit_code: 1, status: 422 });
    const refused = await runCli(['topics', 'list', '--json'], { env: { ...remote, HERALD_API_KEY: 'sk_wrong' } });
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stderr).error).toMatchObject({ exit_code: 1, status: 401, code: 'unauthorized' });
  });

  it('with --json, a usage error is a JSON object on stderr with exit code 2, whoever found it', async () => {
    for (const args of [
      ['send', '--to', 'ann', '--json'], // commander: a required option missing
      ['topics', 'list', '--bogus', '--json'], // commander: an unknown option
      ['topics', 'subscribe', 'news', '--json'], // the command: no ids
    ]) {
      const res = await runCli(args, { env: remote });
      expect(res.code, res.stderr).toBe(2);
      expect(res.stdout).toBe('');
      const { error } = JSON.parse(res.stderr);
      expect(error).toEqual({ message: expect.any(String), exit_code: 2 });
      expect(error.message).not.toMatch(/^error: /);
    }
  });

  it('without --json, errors stay one line of text', async () => {
    const res = await runCli(['topics', 'subscribe', 'news'], { env: remote });
    expect(res.code).toBe(2);
    expect(res.stderr).toBe('herald: name at least one external id, or --file\n');
  });
});

// The documents' shell examples, run as printed: for each of README.md and docs/*.md, every ```sh block's
// herald command lines and variable assignments run in order, as one bash script, against a Herald of
// its own (a fresh install with one tenant, as a reader starts from). The reader's shell is set up as the
// documents assume: on the host (HERALD_HOME) with HERALD_URL and HERALD_API_KEY exported; a line that
// names --tenant, --data-dir or --install runs in local mode (HERALD_URL unset). What the examples only
// name stands for something real here: <tenant-id> is the tenant, <event_id> the latest event, the
// example URLs this Herald, /var/lib/herald its data directory, the files they read are in the working
// directory. The lines that cannot run here are in SKIPPED, each with its reason. The channel documents
// (FIRST_SENDS) start from a bare tenant, as their reader does, and their curl calls to Herald run too
// (their first send needs the type they make); what they send must reach the provider's local peer.
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestApp, type TestApp } from './support/app.ts';
import { createTenantFixture, type TenantFixture } from './support/fixtures.ts';
import { testTempDir } from './support/tmp.ts';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.ts';
import { generateKey } from '../server/base/crypto/keyring.ts';
import {
  DOCUMENTS,
  READERS_OWN,
  runsHerald,
  setsVariables,
  shellBlocks,
  type Example,
} from './support/doc-examples.ts';
import { seedWelcomeNotification } from '../server/resources/welcome.ts';
import { FIRST_SENDS, type FirstSendPeers } from './support/doc-first-sends.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Example lines that do not run here: the document, a piece of the line, and why. */
const SKIPPED: Array<{ doc: string; line: string; reason: string }> = [
  { doc: 'docs/install.md', line: 'herald init  ', reason: 'interactive: it asks at a terminal' },
  {
    doc: 'docs/install.md',
    line: 'herald init --yes',
    reason: 'a new install with its own embedded PostgreSQL (test/install.test.ts and test/cli/ run init)',
  },
  { doc: 'docs/install.md', line: 'herald start', reason: 'serves until stopped' },
  { doc: 'docs/metrics.md', line: 'herald start', reason: 'serves until stopped' },
  { doc: 'docs/scale-out.md', line: 'herald start', reason: 'serves until stopped' },
  {
    doc: 'docs/operations.md',
    line: 'herald restore',
    reason: 'a new install from the backup, with its own PostgreSQL (test/base/db/backup.test.ts restores)',
  },
  {
    doc: 'docs/scale-out.md',
    line: 'export DATABASE_URL=',
    reason: "names the reader's database server and keys (here: this Herald's)",
  },
  {
    doc: 'docs/tenants-and-console.md',
    line: 'herald transports email set',
    reason: "resolves smtp.acme.test, a real SMTP server's name (test/cli/transports.test.ts sets a local one)",
  },
  {
    doc: 'docs/tenants-and-console.md',
    line: 'herald transports email test',
    reason: 'sends through a real SMTP server (test/cli/transports.test.ts does, to a local one)',
  },
];

const used = new Set<(typeof SKIPPED)[number]>();

/** A curl call, which runs in the documents of FIRST_SENDS. */
const callsCurl = (text: string) => /^\s*curl\s/.test(text);

/** The examples of a document that run here, block by block; the skipped ones are noted in `used`. */
function runnableBlocks(doc: string): Example[][] {
  const runsCurl = doc in FIRST_SENDS;
  return shellBlocks(doc)
    .map((block) =>
      block.filter((example) => {
        if (/^\s*(#|$)/.test(example.text)) return false;
        if (!runsHerald(example.text) && !setsVariables(example.text) && !(runsCurl && callsCurl(example.text)))
          return false;
        const skip = SKIPPED.find((s) => s.doc === doc && example.text.includes(s.line));
        if (skip) used.add(skip);
        return !skip;
      }),
    )
    .filter((block) => block.some((example) => runsHerald(example.text) || (runsCurl && callsCurl(example.text))));
}

/** Runs a bash script; resolves with its exit code and output. */
function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** The types, templates and contact the documents name. */
async function configureTenant(app: TestApp, acme: TenantFixture): Promise<void> {
  const types = ['deploy_finished', 'release_notes', 'maintenance', 'order_shipped', 'comment_added'];
  const applied = await app.request('POST', '/v1/configuration/apply', {
    token: acme.serviceKey,
    body: {
      document: {
        notification_types: types.map((key) => ({ key, name: key })),
        email_templates: [{ notification_type_key: 'order_shipped', subject: 'Shipped', content: '<p>Shipped</p>' }],
        inbox_templates: types.map((key) => ({ notification_type_key: key, title: key, content: key })),
      },
    },
  });
  expect(applied.status, applied.text).toBe(200);
  await acme.contact('user-42', { email: 'ann@example.com', name: 'Ann' });
}

/**
 * Everything the examples refer to, in a working directory and a fresh Herald with one tenant: with the
 * types, templates and contact the documents name, or bare (its welcome type only) for a first send.
 */
async function installFor(
  doc: string,
  peers: FirstSendPeers | undefined,
): Promise<{
  app: TestApp;
  receiver: WebhookReceiver;
  dir: string;
  env: Record<string, string>;
  prelude: string;
  substitute: (text: string) => string;
}> {
  const app = await startTestApp({
    config: { allowPrivateWebhookUrls: true, ...peers?.config },
    keyFile: { active: 'k1', keys: { k1: generateKey() } },
  });
  const receiver = await startWebhookReceiver();
  const acme = await createTenantFixture(app, 'Acme');
  await seedWelcomeNotification(app.runtime.orm.em.fork(), acme.tenantId);
  if (!peers) await configureTenant(app, acme);

  const dir = testTempDir(`docs-${doc.replace(/\W/g, '-')}-`);
  symlinkSync(join(ROOT, 'bin'), join(dir, 'bin'));
  symlinkSync(app.dataDir, join(dir, 'data'));
  mkdirSync(join(dir, 'backups'));
  writeFileSync(join(dir, 'more-ids.txt'), 'user-3\nuser-4\n');
  writeFileSync(join(dir, 'users.ndjson'), '{"external_id": "user-5", "email": "five@example.com"}\n');
  writeFileSync(join(dir, 'users.csv'), 'external_id,email,name,plan\nuser-6,six@example.com,Six,pro\n');
  writeFileSync(join(dir, 'users.json'), JSON.stringify([{ external_id: 'user-7', name: 'Seven' }]));
  writeFileSync(
    join(dir, 'workflow.json'),
    JSON.stringify({
      steps: [
        { kind: 'channel', channel: 'inbox' },
        { kind: 'delay', seconds: 3600 },
      ],
    }),
  );

  const substitute = (text: string) =>
    (peers?.substitute(text) ?? text)
      .replace(/<tenant-id>/g, acme.tenantId)
      .replace(/<event_id>/g, `$(latest /v1/notifications)`)
      .replace(/<broadcast-id>/g, `$(latest /v1/broadcasts)`)
      .replace(/<webhook-id>/g, `$(latest /v1/webhooks)`)
      .replace(/<template-id>/g, `$(first /v1/email-templates)`)
      .replace(/<old-id>/g, 'k1')
      .replace(/https:\/\/api\.acme\.example\/herald/g, `${receiver.url}/herald`)
      .replace(/http:\/\/127\.0\.0\.1:8025|https:\/\/herald\.(acme\.example|acme\.test|example\.com)/g, app.url)
      .replace(/\bsk_\.\.\./g, acme.serviceKey)
      .replace(/\/var\/lib\/herald(?![\w-])/g, app.dataDir)
      .replace(/\/backups\//g, `${dir}/backups/`);

  // Local mode when the line says so: HERALD_URL (exported, as for the remote examples) would pick remote.
  const prelude = [
    'set -euo pipefail',
    `herald() { case " $* " in *" --tenant "*|*" --data-dir "*|*" --install "*) HERALD_URL= command herald "$@" ;; *) command herald "$@" ;; esac; }`,
    // A curl call Herald refuses fails the example, its answer printed (curl -s alone exits 0 on a 4xx).
    `curl() { command curl --fail-with-body "$@"; }`,
    `latest() { command curl -sf -H "Authorization: Bearer $DOCS_KEY" "$DOCS_URL$1?limit=1" | jq -r '.items[0] | .event_id // .broadcast_id // .id'; }`,
    `first() { command curl -sf -H "Authorization: Bearer $DOCS_KEY" "$DOCS_URL$1" | jq -r '.[0].id'; }`,
    // The reader's own alerting (docs/operations.md): here a failure of the example.
    `alert() { printf 'alert: %s\\n' "$*" >&2; return 1; }`,
  ].join('\n');
  const env = {
    ...READERS_OWN,
    PATH: `${join(ROOT, 'bin')}:${process.env.PATH}`,
    HERALD_HOME: app.dataDir,
    DATABASE_URL: app.database.url,
    HERALD_LOG_LEVEL: 'error',
    // What herald.json would say of this install: the CLI on the host reads it.
    HERALD_MODE: app.config.mode,
    HERALD_PORT: new URL(app.url).port,
    HERALD_ALLOW_PRIVATE_WEBHOOK_URLS: 'true',
    HERALD_URL: app.url,
    HERALD_API_KEY: acme.serviceKey,
    DOCS_URL: app.url,
    DOCS_KEY: acme.serviceKey,
    ...peers?.env,
  };
  return { app, receiver, dir, env, prelude, substitute };
}

describe('the shell examples of the documents', () => {
  const runnable = DOCUMENTS.map((doc) => ({ doc, blocks: runnableBlocks(doc) }));

  it('skip only lines the documents have, each for its reason', () => {
    expect(SKIPPED.filter((skip) => !used.has(skip))).toEqual([]);
  });

  for (const { doc, blocks } of runnable) {
    if (blocks.length === 0) continue;
    it(`run as printed: ${doc}`, { timeout: 600_000 }, async () => {
      const peers = await FIRST_SENDS[doc]?.();
      const { app, receiver, dir, env, prelude, substitute } = await installFor(doc, peers);
      let printed = '';
      try {
        for (const block of blocks) {
          const script = [
            prelude,
            ...block.flatMap((example) => [
              `printf '%s\\n' ${quote(`$ ${example.text}    (${example.doc}:${example.line})`)} >&2`,
              substitute(example.text),
            ]),
          ].join('\n');
          const result = await bash(script, dir, env);
          expect(result.code, result.out).toBe(0);
          printed += result.out;
        }
        peers?.check(printed);
      } finally {
        await receiver.close();
        await app.close();
        await peers?.close();
      }
    });
  }
});

// herald init: creates the data directory, its config file and key file, the database schema and, on a
// single-tenant install, the tenant and its owner. Interactive on a TTY; --yes for scripts.
import { existsSync, mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { type Command, Option } from 'commander';
import * as prompts from '@clack/prompts';
import { configFilePath, loadConfig, readConfigFile, defaultDataDir, writeConfigFile } from '../server/base/config.ts';
import { loadKeyRing } from '../server/base/crypto/keyring.ts';
import { openDatabase, applyMigrations } from '../server/base/db/orm.ts';
import { freePort, openChoosingPortAgain } from '../server/base/db/embedded-postgres.ts';
import { createTenant, listAllTenants } from '../server/resources/tenants.ts';
import { createUser, findUserByEmail } from '../server/resources/users.ts';
import { seedWelcomeNotification } from '../server/resources/welcome.ts';
import { PASSWORD_MAX, PASSWORD_MIN } from '../server/base/auth/passwords.ts';
import { CliError, print, printJson, usageError } from './support/output.ts';
import { examples } from './support/examples.ts';
import { readSecret } from './support/file-input.ts';
import { deprecatedSecretOption, secretOf, warnDeprecatedSecretFlag } from './support/deprecated-secret-flag.ts';

interface InitOptions {
  yes?: boolean;
  json?: boolean;
  dataDir?: string;
  mode?: 'single' | 'multi';
  databaseUrl?: string;
  host?: string;
  port?: string;
  publicUrl?: string;
  smtpUrl?: string;
  smtpUrlFile?: string;
  tenant?: string;
  ownerEmail?: string;
  ownerPassword?: string;
  ownerPasswordFile?: string;
  embeddedPostgresPort?: string;
}

export function registerInit(program: Command): void {
  program
    .command('init')
    .description(
      'set up a data directory: config, encryption key, database schema and (single mode) the tenant and its owner',
    )
    .option('-y, --yes', 'run non-interactively with the given flags and defaults')
    .option('--data-dir <dir>', 'data directory to create or update')
    .addOption(
      new Option('--mode <mode>', 'single: one pinned tenant, signup closed; multi: open signup').choices([
        'single',
        'multi',
      ]),
    )
    .option('--database-url <url>', 'external PostgreSQL (default: embedded PostgreSQL in the data directory)')
    .option(
      '--embedded-postgres-port <port>',
      'port of the embedded PostgreSQL on 127.0.0.1 (default: a free port, recorded in herald.json)',
    )
    .option('--host <host>', 'address to listen on (default 127.0.0.1)')
    .option('--port <port>', 'port to listen on (default 8025)')
    .option('--public-url <url>', 'URL people reach Herald at (used in emailed links)')
    .option(
      '--smtp-url-file <path>',
      'read the install\'s own SMTP server from a file, or "-" for stdin, e.g. smtp://user:pass@mail.example:587',
    )
    .option(
      '--smtp-url <url>',
      "the install's own SMTP server without a password, e.g. smtp://mail.example:25 (with a password in it: deprecated, use --smtp-url-file)",
    )
    .option('--tenant <name>', 'single mode: the tenant name')
    .option('--owner-email <email>', "single mode: the owner's email")
    .option(
      '--owner-password-file <path>',
      'single mode: read the owner\'s password from a file, or "-" for stdin (default: generated and printed once)',
    )
    .addOption(
      deprecatedSecretOption(
        '--owner-password <password>',
        "single mode: the owner's password",
        '--owner-password-file',
      ),
    )
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      examples(
        'herald init                                    # interactive',
        'herald init --yes --data-dir /var/lib/herald --tenant Acme --owner-email ops@acme.test',
        'printf \'%s\' "$OWNER_PASSWORD" | herald init --yes --tenant Acme --owner-email ops@acme.test --owner-password-file -',
        'herald init --yes --tenant Acme --owner-email ops@acme.test --smtp-url-file /run/secrets/smtp-url',
        'herald init --yes --data-dir /srv/herald-b --tenant AcmeB --owner-email ops@acme.test --embedded-postgres-port 54400',
        'herald init --yes --mode multi --database-url postgres://herald@db/herald --public-url https://herald.acme.test',
      ),
    )
    .action(async (options: InitOptions) => {
      await runInit(options);
    });
}

async function runInit(options: InitOptions): Promise<void> {
  const interactive = !options.yes;
  if (interactive && !process.stdin.isTTY)
    throw usageError('stdin is not a terminal: pass --yes (and flags) to run init non-interactively');
  readSecretOptions(options);
  if (interactive) await promptMissing(options);

  const dataDir = options.dataDir ?? process.env.HERALD_HOME ?? defaultDataDir();
  if (options.embeddedPostgresPort !== undefined && !/^\d+$/.test(options.embeddedPostgresPort))
    throw usageError('--embedded-postgres-port must be a number');
  // 0711: private listing, but traversable by the 'postgres' user that runs the embedded cluster as root.
  mkdirSync(dataDir, { recursive: true, mode: 0o711 });
  // The config file keeps what was chosen here; later edits and HERALD_* variables still win over it.
  const existing = readConfigFile(dataDir);
  const chosen: Record<string, unknown> = {
    ...existing,
    ...(options.mode ? { mode: options.mode } : {}),
    ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
    ...(options.host ? { host: options.host } : {}),
    ...(options.port ? { port: Number(options.port) } : {}),
    ...(options.publicUrl ? { publicUrl: options.publicUrl } : {}),
    ...(options.smtpUrl ? { smtpUrl: options.smtpUrl } : {}),
  };
  chosen.mode ??= 'single';
  let config = loadConfig({ ...chosen, dataDir } as never);
  // The embedded cluster's port is chosen once (given, or free now) and kept in herald.json: a second
  // install on the same host gets its own cluster on its own port.
  let portChosenHere = false;
  if (!config.databaseUrl && (options.embeddedPostgresPort || chosen.embeddedPostgresPort === undefined)) {
    const given = options.embeddedPostgresPort ? Number(options.embeddedPostgresPort) : config.embeddedPostgresPort;
    portChosenHere = given === undefined;
    chosen.embeddedPostgresPort = given ?? (await freePort());
    config = loadConfig({ ...chosen, dataDir } as never);
  }
  writeConfigFile(dataDir, chosen);

  loadKeyRing({ dataDir, encryptionKeys: config.encryptionKeys, create: true });
  const db = await openChoosingPortAgain(
    () => openDatabase(config, { poolMax: 2, create: true }),
    portChosenHere
      ? (port) => {
          chosen.embeddedPostgresPort = port;
          config = loadConfig({ ...chosen, dataDir } as never);
          writeConfigFile(dataDir, chosen);
        }
      : null,
  );
  let summary: Record<string, unknown>;
  try {
    const applied = await applyMigrations(db.orm);
    summary = {
      data_dir: dataDir,
      mode: config.mode,
      database: config.databaseUrl ? 'external' : 'embedded',
      migrations_applied: applied,
    };
    if (config.mode === 'single') Object.assign(summary, await ensureSingleTenant(db.orm.em.fork(), options));
  } finally {
    await db.close();
  }
  if (options.json) {
    printJson(summary);
    return;
  }
  print(`Herald is set up in ${dataDir} (${config.mode}-tenant, ${summary.database} PostgreSQL).`);
  if (summary.tenant_id)
    print(
      `Tenant: ${summary.tenant_name} (${summary.tenant_id})${summary.owner_email ? `; owner: ${summary.owner_email}` : ' (already set up)'}`,
    );
  if (summary.generated_password) print(`Owner password (shown once, store it now): ${summary.generated_password}`);
  print(`Next: herald start --data-dir ${dataDir}`);
}

/** The SMTP URL and owner password from their files (or their deprecated flags) into the options. */
function readSecretOptions(options: InitOptions): void {
  if (options.smtpUrlFile !== undefined && options.smtpUrl !== undefined)
    throw usageError('give --smtp-url-file or --smtp-url, not both');
  // Standard input can be read once: the second reader would get nothing.
  if (options.smtpUrlFile === '-' && options.ownerPasswordFile === '-')
    throw usageError('--smtp-url-file and --owner-password-file cannot both read standard input (-)');
  if (options.smtpUrlFile !== undefined) options.smtpUrl = readSecret(options.smtpUrlFile, '--smtp-url-file');
  else if (options.smtpUrl !== undefined && URL.canParse(options.smtpUrl) && new URL(options.smtpUrl).password)
    warnDeprecatedSecretFlag('--smtp-url with a password', '--smtp-url-file');
  options.ownerPassword = secretOf(
    { file: options.ownerPasswordFile, flag: options.ownerPassword },
    { file: '--owner-password-file', flag: '--owner-password' },
  );
}

/** Single mode: the install's one tenant and its verified owner, created once. */
async function ensureSingleTenant(
  em: Parameters<typeof createTenant>[0],
  options: InitOptions,
): Promise<Record<string, unknown>> {
  const tenants = await listAllTenants(em);
  if (tenants.length > 0) return { tenant_id: tenants[0]!.id, tenant_name: tenants[0]!.name, created: false };
  const name = (options.tenant ?? '').trim();
  const email = (options.ownerEmail ?? '').trim().toLowerCase();
  if (!name || name.length > 100) throw usageError('single mode needs --tenant <name> (1 to 100 characters)');
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw usageError('single mode needs --owner-email <email>');
  let password = options.ownerPassword;
  let generated: string | undefined;
  if (!password) {
    generated = randomBytes(18).toString('base64url');
    password = generated;
  }
  if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
    throw usageError(`the owner password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`);
  }
  const result = await em.transactional(async (tx) => {
    if (await findUserByEmail(tx, email)) throw new CliError(`a user with email ${email} already exists`);
    const user = await createUser(tx, { email, password: password!, verified: true });
    const tenant = await createTenant(tx, { name, ownerUserId: user.id, makeDefault: true });
    await seedWelcomeNotification(tx, tenant.id);
    return { tenant, user };
  });
  return {
    tenant_id: result.tenant.id,
    tenant_name: result.tenant.name,
    owner_email: result.user.email,
    created: true,
    ...(generated ? { generated_password: generated } : {}),
  };
}

async function promptMissing(options: InitOptions): Promise<void> {
  prompts.intro('Herald setup');
  const ask = async <T>(value: Promise<T>): Promise<Exclude<T, symbol>> => {
    const answer = await value;
    if (prompts.isCancel(answer)) {
      prompts.cancel('Setup cancelled.');
      throw new CliError('cancelled', 1);
    }
    return answer as Exclude<T, symbol>;
  };
  options.dataDir ??= await ask(
    prompts.text({ message: 'Data directory', initialValue: process.env.HERALD_HOME ?? defaultDataDir() }),
  );
  options.mode ??= await ask(
    prompts.select({
      message: 'Tenancy',
      options: [
        { value: 'single' as const, label: 'single', hint: 'one organisation, signup closed' },
        { value: 'multi' as const, label: 'multi', hint: 'anyone may sign up and create tenants' },
      ],
    }),
  );
  if (options.databaseUrl === undefined) {
    const external = await ask(
      prompts.confirm({ message: 'Use an external PostgreSQL (instead of the embedded one)?', initialValue: false }),
    );
    if (external)
      options.databaseUrl = await ask(
        prompts.text({ message: 'PostgreSQL URL', placeholder: 'postgres://user:pass@host:5432/herald' }),
      );
  }
  options.port ??= await ask(prompts.text({ message: 'Port', initialValue: '8025' }));
  if (options.smtpUrl === undefined) {
    const smtp = await ask(
      prompts.text({
        message: 'SMTP URL for system emails (empty to skip)',
        placeholder: 'smtp://user:pass@mail.example:587',
      }),
    );
    if (smtp) options.smtpUrl = smtp;
  }
  if (options.mode === 'single' && !existsSync(configFilePath(options.dataDir!))) {
    options.tenant ??= await ask(prompts.text({ message: 'Tenant (organisation) name' }));
    options.ownerEmail ??= await ask(prompts.text({ message: "Owner's email" }));
    options.ownerPassword ??= await ask(
      prompts.password({
        message: `Owner's password (${PASSWORD_MIN}+ characters)`,
        validate: (v) => (v && v.length >= PASSWORD_MIN ? undefined : `at least ${PASSWORD_MIN} characters`),
      }),
    );
  }
  prompts.outro('Writing configuration');
}

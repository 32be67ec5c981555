// The herald CLI. Each command group lives in its own file and is listed in COMMAND_GROUPS. Only the
// group a command line names is loaded (its server modules are heavy), so `herald send` starts with
// its HTTP client alone; --help and unknown commands load them all. `herald --version` loads nothing
// (not even commander): CI scripts call it on every run.
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { EXIT_OK, EXIT_OUTPUT_CLOSED, EXIT_USAGE, describeFailure, printFailure } from './support/output.ts';
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

type Register = (program: Command) => void;

/** Top-level command name -> the module that registers it. */
const COMMAND_GROUPS: Record<string, () => Promise<Register>> = {
  init: async () => (await import('./init.ts')).registerInit,
  start: async () => (await import('./start.ts')).registerStart,
  migrate: async () => (await import('./migrate.ts')).registerMigrate,
  status: async () => (await import('./status.ts')).registerStatus,
  backup: async () => (await import('./backup.ts')).registerBackup,
  restore: async () => (await import('./backup.ts')).registerRestore,
  tenants: async () => (await import('./tenants.ts')).registerTenants,
  users: async () => (await import('./users.ts')).registerUsers,
  keys: async () => (await import('./keys.ts')).registerKeys,
  transports: async () => (await import('./transports.ts')).registerTransports,
  contacts: async () => (await import('./contacts.ts')).registerContacts,
  send: async () => (await import('./send.ts')).registerSend,
  events: async () => (await import('./events.ts')).registerEvents,
  'api-keys': async () => (await import('./api-keys.ts')).registerApiKeys,
  brands: async () => (await import('./brands.ts')).registerBrands,
  types: async () => (await import('./notification-types.ts')).registerNotificationTypes,
  templates: async () => (await import('./templates.ts')).registerTemplates,
  export: async () => (await import('./configuration.ts')).registerExport,
  apply: async () => (await import('./configuration.ts')).registerApply,
  webhooks: async () => (await import('./webhooks.ts')).registerWebhooks,
  suppressions: async () => (await import('./suppressions.ts')).registerSuppressions,
  audit: async () => (await import('./audit.ts')).registerAudit,
  sso: async () => (await import('./sso.ts')).registerSso,
  topics: async () => (await import('./topics.ts')).registerTopics,
  broadcasts: async () => (await import('./broadcasts.ts')).registerBroadcasts,
};

/** Whether the command line asks for the version alone (`herald --version`, `herald -v`). */
function versionOnly(argv: string[]): boolean {
  const args = argv.slice(2);
  return args.length > 0 && args.every((a) => a === '--version' || a === '-v');
}

/** Whether the command line asks for JSON: then its errors, usage errors included, are JSON on stderr too. */
function jsonRequested(argv: string[]): boolean {
  const args = argv.slice(2);
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).includes('--json');
}

/** The command a command line names: its first word that is not an option. */
function namedCommand(argv: string[]): string | undefined {
  return argv.slice(2).find((a) => !a.startsWith('-'));
}

/** The groups a command line needs: the one it names, none for --version alone, else all (for help). */
function groupsFor(argv: string[]): string[] {
  const named = namedCommand(argv);
  if (named && named in COMMAND_GROUPS) return [named];
  if (versionOnly(argv)) return [];
  return Object.keys(COMMAND_GROUPS);
}

export async function buildProgram(argv: string[] = process.argv): Promise<Command> {
  const { Command } = await import('commander');
  const program = new Command('herald')
    .description('Herald: self-hosted notification delivery (inbox, email, mobile push, web push, SMS, chat, HTTP)')
    .version(pkg.version, '-v, --version', 'print the version')
    .showHelpAfterError(jsonRequested(argv) ? false : '(run with --help for usage)')
    .addHelpText(
      'after',
      `
Examples:
  $ herald init --yes --data-dir /var/lib/herald --tenant Acme --owner-email ops@acme.test
  $ herald start --data-dir /var/lib/herald
  $ herald status --json`,
    );
  // With --json, main() prints commander's usage errors as JSON; every command inherits this setting.
  if (jsonRequested(argv)) program.configureOutput({ outputError: () => {} });
  for (const name of groupsFor(argv)) (await COMMAND_GROUPS[name]!())(program);
  // Every command (and sub-command) reports usage errors with exit code 2 instead of exiting itself.
  const override = (command: Command) => {
    command.exitOverride();
    command.commands.forEach(override);
  };
  override(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  if (versionOnly(argv)) {
    process.stdout.write(`${pkg.version}\n`);
    return EXIT_OK;
  }
  const program = await buildProgram(argv);
  const { CommanderError } = await import('commander');
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version "fail" with exit code 0.
      if (error.exitCode === 0) return EXIT_OK;
      // A group named without its command has had its help printed, which says it all.
      if (jsonRequested(argv) && error.code !== 'commander.help')
        printFailure({ exitCode: EXIT_USAGE, message: error.message.replace(/^error: /, '') }, true);
      return EXIT_USAGE;
    }
    const failure = describeFailure(error);
    printFailure(failure, jsonRequested(argv));
    return failure.exitCode;
  }
}

/**
 * A reader that stops early (`herald events list | head`) closes the pipe. A one-shot command then ends
 * as Unix tools do when SIGPIPE ends them: silently, with 141 (128 + SIGPIPE), which tells a script
 * under `set -o pipefail` that its output was cut, without an EPIPE stack. `start` keeps serving: a
 * server does not end because its output (its log on stderr included) stopped being read, and what it
 * writes after that is dropped.
 */
function handleClosedOutput(argv: string[]): void {
  const serving = namedCommand(argv) === 'start';
  const onError = (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    if (!serving) process.exit(EXIT_OUTPUT_CLOSED);
  };
  process.stdout.on('error', onError);
  if (serving) process.stderr.on('error', onError);
}

handleClosedOutput(process.argv);
const code = await main(process.argv);
// Long-running commands (start) settle their own exit; one-shot commands end here.
process.exitCode = code;

// The herald CLI. Each command group lives in its own file and registers itself here.
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { EXIT_OK, EXIT_USAGE, describeFailure } from './support/output.ts';
import { registerInit } from './init.ts';
import { registerStart } from './start.ts';
import { registerMigrate } from './migrate.ts';
import { registerStatus } from './status.ts';
import { registerApiKeys } from './api-keys.ts';
import { registerBrandings } from './brandings.ts';
import { registerContacts } from './contacts.ts';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export function buildProgram(): Command {
  const program = new Command('herald')
    .description('Herald: self-hosted notification delivery (inbox, email, mobile push, web push)')
    .version(pkg.version, '-v, --version', 'print the version')
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText(
      'after',
      `
Examples:
  $ herald init --yes --data-dir /var/lib/herald --tenant Acme --owner-email ops@acme.test
  $ herald start --data-dir /var/lib/herald
  $ herald status --json`,
    );
  registerInit(program);
  registerStart(program);
  registerMigrate(program);
  registerStatus(program);
  registerApiKeys(program);
  registerBrandings(program);
  registerContacts(program);
  // Every command (and sub-command) reports usage errors with exit code 2 instead of exiting itself.
  const override = (command: Command) => {
    command.exitOverride();
    command.commands.forEach(override);
  };
  override(program);
  return program;
}

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT_OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version "fail" with exit code 0.
      return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    const { code, message } = describeFailure(error);
    process.stderr.write(`herald: ${message}\n`);
    return code;
  }
}

const code = await main(process.argv);
// Long-running commands (start) settle their own exit; one-shot commands end here.
process.exitCode = code;

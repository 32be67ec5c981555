// herald suppressions list|add|remove: a tenant's email suppression list, on the host (--tenant) or
// remotely (--url/--api-key), the same requests.
import type { Command } from 'commander';
import type { SuppressionResponse } from '../server/schemas/suppressions.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { print, printJson, printTable } from './support/output.ts';
import { suppressions } from './support/paths.ts';
import type { RemoteClient } from './support/remote.ts';
import { onTarget, withTarget, type TargetOptions } from './support/target.ts';
import { examples } from './support/examples.ts';

interface SuppressionApi {
  list(query: Record<string, string>): Promise<{ items: SuppressionResponse[]; next_cursor: string | null }>;
  add(email: string): Promise<SuppressionResponse>;
  remove(email: string): Promise<void>;
}

const api = (client: RemoteClient): SuppressionApi => ({
  list: (query) => client.call('GET', suppressions.list(query)),
  add: (email) => client.call('POST', suppressions.create(), { body: { email } }),
  remove: (email) => client.call('DELETE', suppressions.one(email)),
});

/** Runs `fn` with the operations of the chosen mode: the same requests, to Herald at --url or in process. */
const run = <T>(options: TargetOptions, fn: (api: SuppressionApi) => Promise<T>): Promise<T> =>
  onTarget(options, (client) => fn(api(client)));

export function registerSuppressions(program: Command): void {
  const group = program
    .command('suppressions')
    .description("a tenant's email suppression list: addresses the email channel skips (reason suppressed)")
    .addHelpText(
      'after',
      `
Local mode (on the host): [--tenant <id>] [--data-dir <dir>]. Remote mode: --url and --api-key, or HERALD_URL and HERALD_API_KEY.
` +
        examples(
          'herald suppressions list --tenant <id>',
          'herald suppressions add ann@example.org --tenant <id>',
          'herald suppressions remove ann@example.org --url $HERALD_URL --yes',
        ),
    );

  withTarget(group.command('list'))
    .description('list suppressed addresses (bounced, complained, or added by hand)')
    .option('--email <address>', 'only this address')
    .option('--limit <n>', 'how many (1..200)', '200')
    .addHelpText(
      'after',
      examples(
        'herald suppressions list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald suppressions list --email ann@example.org --url $HERALD_URL --json',
      ),
    )
    .action(async (options: TargetOptions & { email?: string; limit: string }) => {
      const query: Record<string, string> = {
        limit: options.limit,
        ...(options.email ? { email: options.email } : {}),
      };
      const page = await run(options, (api) => api.list(query));
      if (options.json) return printJson(page.items);
      printTable(page.items, ['email', 'reason', 'created_at']);
    });

  withTarget(group.command('add'))
    .description('suppress an address')
    .argument('<email>', 'the address')
    .addHelpText(
      'after',
      examples(
        'herald suppressions add ann@example.org --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald suppressions add ann@example.org --url $HERALD_URL',
      ),
    )
    .action(async (email: string, options: TargetOptions) => {
      const entry = await run(options, (api) => api.add(email));
      if (options.json) return printJson(entry);
      print(`${entry.email} is suppressed (${entry.reason}).`);
    });

  withTarget(group.command('remove'))
    .description('lift the suppression of an address: email to it flows again')
    .argument('<email>', 'the address')
    .option('--yes', 'do not ask for confirmation')
    .addHelpText(
      'after',
      examples('herald suppressions remove ann@example.org --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --yes'),
    )
    .action(async (email: string, options: TargetOptions & { yes?: boolean }) => {
      await confirmUnlessYes(options.yes, {
        question: `Send email to ${email} again?`,
        withoutTerminal: 'removing a suppression needs --yes when not at a terminal',
      });
      await run(options, (api) => api.remove(email));
      if (options.json) return printJson({ removed: email });
      print(`${email} is no longer suppressed.`);
    });
}

// herald types workflow get|set|remove: a notification type's workflow (remote mode), kept in a JSON
// file beside the code that triggers it and set from CI.
import type { Command } from 'commander';
import { readJsonObject } from './support/file-input.ts';
import { EXIT_FAILURE, print, printJson, printTable, usageError } from './support/output.ts';
import { remoteClient, withRemote, type RemoteOptions } from './support/remote.ts';
import type { NotificationTypeResponse } from '../server/schemas/notification-types.ts';

export function registerTypes(program: Command): void {
  const types = program.command('types').description('notification types (remote mode: --url/--api-key or HERALD_URL/HERALD_API_KEY)');
  const workflow = types
    .command('workflow')
    .description("a type's workflow: channel steps with conditions, delays, digests, throttles")
    .addHelpText(
      'after',
      `
A workflow file is {"steps": [...]}, for example:
  {"steps": [{"kind": "channel", "channel": "inbox"},
             {"kind": "delay", "seconds": 3600},
             {"kind": "channel", "channel": "email", "if": "inbox.read == false"}]}

Examples:
  $ herald types workflow get comment_added --json
  $ herald types workflow set comment_added -f workflow.json
  $ herald types workflow remove comment_added`,
    );
  withRemote(workflow.command('get').description("show a type's workflow").argument('<key>').option('--json', 'print JSON')).action(
    async (key: string, options: RemoteOptions & { json?: boolean }) => {
      const type = await remoteClient(options, { invalidInputExit: EXIT_FAILURE }).call<NotificationTypeResponse>('GET', `/v1/notification-types/${encodeURIComponent(key)}`);
      if (options.json) return printJson(type.workflow);
      if (!type.workflow) return print(`${key} has no workflow: every enabled channel at once`);
      printTable(
        type.workflow.steps.map((step, index) => ({ index, ...step })),
        ['index', 'kind', 'channel', 'if', 'seconds', 'until', 'window_seconds', 'key', 'max_events', 'limit'],
      );
    },
  );
  withRemote(
    workflow
      .command('set')
      .description("set a type's workflow from a JSON file")
      .argument('<key>')
      .requiredOption('-f, --file <file>', "the workflow as JSON ({\"steps\": [...]}), or '-' for stdin")
      .option('--json', 'print the type as JSON'),
  ).action(async (key: string, options: RemoteOptions & { file: string; json?: boolean }) => {
    const body = readJsonObject(options.file, '--file');
    if (!Array.isArray(body.steps)) throw usageError('the workflow file must be a JSON object with a "steps" list');
    const type = await remoteClient(options, { invalidInputExit: EXIT_FAILURE }).call<NotificationTypeResponse>(
      'PUT',
      `/v1/notification-types/${encodeURIComponent(key)}/workflow`,
      { body },
    );
    if (options.json) return printJson(type);
    print(`workflow of ${key} set: ${type.workflow!.steps.length} step(s)`);
  });
  withRemote(workflow.command('remove').description('back to the default: every enabled channel at once').argument('<key>')).action(
    async (key: string, options: RemoteOptions) => {
      await remoteClient(options, { invalidInputExit: EXIT_FAILURE }).call('DELETE', `/v1/notification-types/${encodeURIComponent(key)}/workflow`);
      print(`workflow of ${key} removed`);
    },
  );
}

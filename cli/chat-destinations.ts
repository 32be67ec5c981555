// herald contacts destinations: a contact's chat destinations (a person, or a team channel posing as a
// contact) over the HTTP API. The contact is named by its external id, as `herald send --to` names it;
// `add --create` makes the contact first when there is none, so that a team channel takes one command;
// when the destination is then refused, it deletes that contact again, so a failed command leaves nothing.
// A webhook URL is a credential: it comes from a file or stdin, and Herald answers only its hint.
import type { Command } from 'commander';
import { CliError, describeFailure, print, printJson, printTable, usageError } from './support/output.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { readSecret } from './support/file-input.ts';
import { contacts as paths } from './support/paths.ts';
import { ApiError, remoteClient, withRemote, type RemoteClient, type RemoteOptions } from './support/remote.ts';
import { examples } from './support/examples.ts';
import type { ContactResponse } from '../server/schemas/contacts.ts';

const PROVIDERS = ['slack', 'teams', 'discord', 'telegram', 'mattermost', 'google_chat'];

type Destination = Record<string, unknown>;

interface AddOptions extends RemoteOptions {
  provider: string;
  webhookUrlFile?: string;
  channel?: string;
  chatId?: string;
  label?: string;
  create?: boolean;
  json?: boolean;
}

async function contactId(client: RemoteClient, externalId: string): Promise<string> {
  return (await client.call<ContactResponse>('GET', paths.byExternalId(externalId))).id;
}

/** The contact's id, creating the contact when there is none and `create` is set; `created` says which. */
async function contactIdOrCreate(
  client: RemoteClient,
  externalId: string,
  create = false,
): Promise<{ id: string; created: boolean }> {
  try {
    return { id: await contactId(client, externalId), created: false };
  } catch (error) {
    if (!create || !(error instanceof ApiError) || error.status !== 404) throw error;
  }
  const created = await client.call<ContactResponse>('POST', paths.list(), { body: { external_id: externalId } });
  return { id: created.id, created: true };
}

/** Deletes the contact `add --create` made for a destination Herald refused; if that fails too, the refusal says so. */
async function removeCreated(client: RemoteClient, id: string, externalId: string, refusal: unknown): Promise<void> {
  try {
    await client.call('DELETE', paths.one(id));
  } catch (cleanup) {
    const failure = describeFailure(refusal);
    throw new CliError(
      `${failure.message} (the contact ${externalId} it created is left: ${describeFailure(cleanup).message})`,
      failure.exitCode,
      failure.answer,
    );
  }
}

export function registerChatDestinations(contacts: Command): void {
  const destinations = contacts
    .command('destinations')
    .description("a contact's chat destinations: Slack, Teams, Discord, Telegram, Mattermost, Google Chat")
    .addHelpText(
      'after',
      examples(
        'printf \'%s\' "$SLACK_WEBHOOK_URL" | herald contacts destinations add team-ops --create --provider slack --webhook-url-file -',
        'herald contacts destinations add user-42 --provider telegram --chat-id 123456789',
        'herald contacts destinations list team-ops',
      ),
    );

  withRemote(destinations.command('add <external_id>'))
    .description('add a chat destination to a contact')
    .addHelpText(
      'after',
      examples(
        'printf \'%s\' "$SLACK_WEBHOOK_URL" | herald contacts destinations add team-ops --create --provider slack --webhook-url-file -',
        'herald contacts destinations add team-ops --create --provider telegram --chat-id -1001234567890 --label "ops chat"',
        'herald contacts destinations add user-42 --provider slack --channel U0123456789 --json',
      ),
    )
    .requiredOption('--provider <provider>', PROVIDERS.join(', '))
    .option('--webhook-url-file <path>', 'the incoming webhook URL, from a file or "-" for stdin (a credential)')
    .option('--channel <id>', "slack: a channel or user id, posted to with the tenant's bot token")
    .option('--chat-id <id>', "telegram: the chat id, posted to with the tenant's bot token")
    .option('--label <text>', 'a name to tell destinations apart')
    .option(
      '--create',
      'create the contact when there is none with this external id (deleted again if the destination is refused)',
    )
    .option('--json', 'print the destination as JSON')
    .action(async (externalId: string, options: AddOptions) => {
      if (!PROVIDERS.includes(options.provider))
        throw usageError(`unknown provider ${options.provider}: use ${PROVIDERS.join(', ')}`);
      const body: Destination = { provider: options.provider };
      if (options.webhookUrlFile) body.webhook_url = readSecret(options.webhookUrlFile, 'webhook URL');
      if (options.channel) body.channel = options.channel;
      if (options.chatId) body.chat_id = options.chatId;
      if (options.label) body.label = options.label;
      const client = remoteClient(options);
      const { id, created } = await contactIdOrCreate(client, externalId, options.create);
      let destination: Destination;
      try {
        destination = await client.call<Destination>('POST', paths.chatDestinations(id), { body });
      } catch (refusal) {
        if (created) await removeCreated(client, id, externalId, refusal);
        throw refusal;
      }
      if (options.json) return printJson(destination);
      const where = destination.webhook_url_hint ?? destination.channel ?? destination.chat_id;
      print(`added ${String(destination.provider)} destination ${String(destination.id)} (${String(where)})`);
    });

  withRemote(destinations.command('list <external_id>'))
    .description("list a contact's chat destinations (webhook URLs as hints only)")
    .addHelpText('after', examples('herald contacts destinations list team-ops --json'))
    .option('--json', 'print JSON')
    .action(async (externalId: string, options: RemoteOptions & { json?: boolean }) => {
      const client = remoteClient(options);
      const answer = await client.call<Destination[] | { items: Destination[] }>(
        'GET',
        paths.chatDestinations(await contactId(client, externalId)),
      );
      const list = Array.isArray(answer) ? answer : answer.items;
      if (options.json) return printJson(list);
      if (list.length === 0) return print('no chat destinations');
      printTable(
        list.map((d) => ({
          id: d.id,
          provider: d.provider,
          label: d.label,
          where: d.webhook_url_hint ?? d.channel ?? d.chat_id,
          created_at: d.created_at,
        })),
        ['id', 'provider', 'label', 'where', 'created_at'],
      );
    });

  withRemote(destinations.command('remove <external_id> <destination_id>'))
    .description('remove a chat destination')
    .addHelpText('after', examples('herald contacts destinations remove team-ops 0199... --yes'))
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (externalId: string, destinationId: string, options: RemoteOptions & { yes?: boolean }) => {
      await confirmUnlessYes(options.yes, {
        question: `Remove chat destination ${destinationId}?`,
        withoutTerminal: 'this removes a destination: confirm with --yes',
      });
      const client = remoteClient(options);
      await client.call('DELETE', paths.chatDestination(await contactId(client, externalId), destinationId));
      print('chat destination removed');
    });
}

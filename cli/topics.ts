// herald topics: a tenant's topics and their subscribers, on the host (--tenant) or remotely
// (--url/--api-key or HERALD_URL/HERALD_API_KEY): the same HTTP API requests, in process or over HTTP.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { TopicResponse, TopicSubscriberPage } from '../server/schemas/topics.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { print, printJson, printTable, usageError } from './support/output.ts';
import { topics } from './support/paths.ts';
import type { RemoteClient } from './support/remote.ts';
import { onTarget, withTarget, type TargetOptions } from './support/target.ts';
import { examples } from './support/examples.ts';

/** The operations the commands need: the same requests, to Herald at --url or in process. */
interface TopicApi {
  list(): Promise<TopicResponse[]>;
  get(key: string): Promise<TopicResponse>;
  create(body: unknown): Promise<TopicResponse>;
  remove(key: string): Promise<void>;
  subscribe(key: string, externalIds: string[]): Promise<{ added: number }>;
  unsubscribe(key: string, externalIds: string[]): Promise<{ removed: number }>;
  subscribers(key: string, query: Record<string, string>): Promise<TopicSubscriberPage>;
}

/** The API's cap per subscribe or unsubscribe call. */
const IDS_PER_CALL = 1000;

function topicApi(client: RemoteClient): TopicApi {
  return {
    list: () => client.call('GET', topics.list()),
    get: (key) => client.call('GET', topics.one(key)),
    create: (body) => client.call('POST', topics.list(), { body }),
    remove: async (key) => void (await client.call('DELETE', topics.one(key))),
    subscribe: (key, ids) => client.call('POST', topics.subscribers(key), { body: { external_ids: ids } }),
    unsubscribe: (key, ids) => client.call('DELETE', topics.subscribers(key), { body: { external_ids: ids } }),
    subscribers: (key, query) => client.call('GET', topics.subscribers(key, query)),
  };
}

const run = <T>(options: TargetOptions, fn: (api: TopicApi) => Promise<T>) =>
  onTarget(options, (client) => fn(topicApi(client)));

function printTopic(topic: TopicResponse): void {
  printTable([topic], ['key', 'name', 'subscriber_count', 'created_at']);
}

/** External ids from the arguments and, with --file, one per line of a file ('-' for stdin). */
function externalIdsOf(args: string[], file: string | undefined): string[] {
  const ids = [...args];
  if (file) {
    let text: string;
    try {
      text = readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (error) {
      throw usageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    ids.push(
      ...text
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter(Boolean),
    );
  }
  if (ids.length === 0) throw usageError('name at least one external id, or --file');
  return ids;
}

/** Sends the ids in calls of up to IDS_PER_CALL; answers the sum of the counts. */
async function inChunks(ids: string[], call: (chunk: string[]) => Promise<number>): Promise<number> {
  let total = 0;
  for (let start = 0; start < ids.length; start += IDS_PER_CALL)
    total += await call(ids.slice(start, start + IDS_PER_CALL));
  return total;
}

export function registerTopics(program: Command): void {
  const topics = program
    .command('topics')
    .description(
      "a tenant's topics and their subscribers (local: --tenant; remote: --url/--api-key or HERALD_URL/HERALD_API_KEY)",
    )
    .addHelpText(
      'after',
      examples(
        'herald topics create releases --name "Release notes" --tenant <tenant-id>',
        'HERALD_URL=https://herald.example.com HERALD_API_KEY=sk_... herald topics subscribe releases user-1 user-2',
        'herald topics subscribe releases --file ids.txt --tenant <tenant-id>     # one external id a line',
        'herald topics subscribers releases --all --json --tenant <tenant-id>',
      ),
    );

  withTarget(topics.command('list'))
    .description('list topics with their subscriber counts')
    .addHelpText(
      'after',
      examples('herald topics list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6', 'herald topics list --json'),
    )
    .action(async (options: TargetOptions) => {
      const list = await run(options, (api) => api.list());
      if (options.json) return printJson(list);
      printTable(list, ['key', 'name', 'subscriber_count', 'created_at']);
    });

  withTarget(topics.command('get <key>'))
    .description('show a topic and its subscriber count')
    .addHelpText(
      'after',
      examples(
        'herald topics get releases --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald topics get releases --json',
      ),
    )
    .action(async (key: string, options: TargetOptions) => {
      const topic = await run(options, (api) => api.get(key));
      if (options.json) return printJson(topic);
      printTopic(topic);
    });

  withTarget(topics.command('create <key>'))
    .description('create a topic (fails when the key exists)')
    .option('--name <name>', 'display name (default: the key)')
    .addHelpText(
      'after',
      examples('herald topics create releases --name "Release notes" --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6'),
    )
    .action(async (key: string, options: TargetOptions & { name?: string }) => {
      const topic = await run(options, (api) => api.create({ key, name: options.name ?? key }));
      if (options.json) return printJson(topic);
      print(`created topic ${topic.key}`);
    });

  withTarget(topics.command('delete <key>'))
    .description('delete a topic and its subscriptions (the contacts stay)')
    .option('--yes', 'do not ask for confirmation (required when stdin is not a terminal)')
    .addHelpText('after', examples('herald topics delete releases --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --yes'))
    .action(async (key: string, options: TargetOptions & { yes?: boolean }) => {
      await confirmUnlessYes(options.yes, {
        question: `Delete topic ${key} and its subscriptions?`,
        withoutTerminal: 'refusing to delete without --yes (stdin is not a terminal)',
      });
      await run(options, (api) => api.remove(key));
      if (options.json) return printJson({ deleted: key });
      print(`deleted topic ${key}`);
    });

  withTarget(topics.command('subscribe <key> [external_ids...]'))
    .description('subscribe contacts by external id (unknown ones are created bare)')
    .option('--file <file>', "more external ids, one a line ('-' for stdin)")
    .addHelpText(
      'after',
      examples(
        'herald topics subscribe releases user-1 user-2 --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald topics subscribe releases --file ids.txt     # one external id a line',
        'cut -d, -f1 users.csv | herald topics subscribe releases --file -',
      ),
    )
    .action(async (key: string, args: string[], options: TargetOptions & { file?: string }) => {
      const ids = externalIdsOf(args, options.file);
      const added = await run(options, (api) =>
        inChunks(ids, async (chunk) => (await api.subscribe(key, chunk)).added),
      );
      if (options.json) return printJson({ added });
      print(`subscribed ${added} new contact(s) to ${key}`);
    });

  withTarget(topics.command('unsubscribe <key> [external_ids...]'))
    .description('unsubscribe contacts by external id')
    .option('--file <file>', "more external ids, one a line ('-' for stdin)")
    .addHelpText(
      'after',
      examples(
        'herald topics unsubscribe releases user-2 --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald topics unsubscribe releases --file left.txt',
      ),
    )
    .action(async (key: string, args: string[], options: TargetOptions & { file?: string }) => {
      const ids = externalIdsOf(args, options.file);
      const removed = await run(options, (api) =>
        inChunks(ids, async (chunk) => (await api.unsubscribe(key, chunk)).removed),
      );
      if (options.json) return printJson({ removed });
      print(`unsubscribed ${removed} contact(s) from ${key}`);
    });

  withTarget(topics.command('subscribers <key>'))
    .description("a topic's subscribers, a page at a time (or --all)")
    .option('--limit <n>', 'how many per page (1-200)', '100')
    .option('--cursor <cursor>', 'the next page, as printed by the previous one')
    .option('--all', 'every page')
    .addHelpText(
      'after',
      examples(
        'herald topics subscribers releases --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald topics subscribers releases --all --json | jq -r ".items[].external_id"',
      ),
    )
    .action(async (key: string, options: TargetOptions & { limit: string; cursor?: string; all?: boolean }) => {
      if (!/^\d+$/.test(options.limit)) throw usageError('--limit must be a number');
      const page = await run(options, async (api) => {
        const query = (cursor: string | undefined): Record<string, string> => ({
          limit: options.limit,
          ...(cursor ? { cursor } : {}),
        });
        let current = await api.subscribers(key, query(options.cursor));
        const items = [...current.items];
        while (options.all && current.next_cursor) {
          current = await api.subscribers(key, query(current.next_cursor));
          items.push(...current.items);
        }
        return { items, next_cursor: current.next_cursor };
      });
      if (options.json) return printJson(page);
      printTable(page.items, ['external_id', 'contact_id', 'subscribed_at']);
      if (page.next_cursor) print(`\nmore: --cursor ${page.next_cursor}`);
    });
}

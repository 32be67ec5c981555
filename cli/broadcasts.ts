// herald broadcasts: send a notification type to a topic or to every contact, follow it (--wait, with
// a progress bar on a terminal), list and cancel (remote mode: --url/--api-key or HERALD_URL/
// HERALD_API_KEY). Exit 0 accepted (with --wait: completed with no failed event), 1 an API error, a
// failed event, a canceled broadcast or a --wait timeout, 2 a usage error.
import type { Command } from 'commander';
import type { BroadcastAccepted, BroadcastPage, BroadcastResponse } from '../server/schemas/broadcasts.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { messageFields, withMessageOptions, type MessageOptions } from './support/message-options.ts';
import { CliError, EXIT_FAILURE, print, printJson, printTable, usageError } from './support/output.ts';
import { broadcasts as paths } from './support/paths.ts';
import { progressBar } from './support/progress.ts';
import { remoteClient, withRemote, type RemoteClient, type RemoteOptions } from './support/remote.ts';
import { examples } from './support/examples.ts';

interface CreateOptions extends RemoteOptions, MessageOptions {
  type: string;
  topic?: string;
  allContacts?: boolean;
  sendAt?: string;
  wait?: boolean;
  timeout: string;
  json?: boolean;
}

interface WaitOptions {
  wait?: boolean;
  timeout: string;
  json?: boolean;
}

function timeoutOf(options: WaitOptions): number {
  const timeout = Number(options.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) throw usageError('--timeout must be a positive number of seconds');
  return timeout;
}

function printBroadcast(b: BroadcastResponse): void {
  const audience = 'topic' in b.audience ? `topic ${b.audience.topic}` : 'all contacts';
  print(`broadcast   ${b.broadcast_id}`);
  print(`type        ${b.type}`);
  print(`audience    ${audience}`);
  print(`status      ${b.status}`);
  print(`targeted    ${b.targeted}`);
  print(`events      ${b.events_created}`);
  print(
    `counts      delivered ${b.counts.delivered}, failed ${b.counts.failed}, skipped ${b.counts.skipped}, canceled ${b.counts.canceled}, pending ${b.counts.pending}`,
  );
  if (b.send_at) print(`send_at     ${b.send_at}`);
  print(`created_at  ${b.created_at}`);
  if (b.completed_at) print(`completed   ${b.completed_at}`);
  if (b.failure_reason) print(`failure     ${b.failure_reason}`);
}

/** Polls the broadcast until it is completed, canceled or failed (or the timeout), drawing its progress. */
async function waitForBroadcast(client: RemoteClient, id: string, timeoutSeconds: number): Promise<BroadcastResponse> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  const progress = progressBar('broadcast');
  try {
    for (let delay = 250; ; delay = Math.min(2000, delay * 2)) {
      const b = await client.call<BroadcastResponse>('GET', paths.one(id));
      const final = b.events_created - b.counts.pending;
      progress.update(final, Math.max(b.targeted, b.events_created), `${final}/${b.targeted} ${b.status}`);
      if (b.status === 'completed' || b.status === 'canceled' || b.status === 'failed') return b;
      if (Date.now() >= deadline)
        throw new CliError(
          `broadcast ${id} not completed after ${timeoutSeconds} s (${b.status}, ${b.counts.pending} pending)`,
          EXIT_FAILURE,
        );
      await new Promise((r) => setTimeout(r, Math.min(delay, Math.max(0, deadline - Date.now()))));
    }
  } finally {
    progress.finish();
  }
}

/** Prints the finished broadcast; exit 1 when it was canceled or failed, or some of its events failed. */
function reportFinished(b: BroadcastResponse, json: boolean | undefined): void {
  if (json) printJson(b);
  else printBroadcast(b);
  if (b.status === 'canceled') {
    process.stderr.write('herald: the broadcast was canceled\n');
    process.exitCode = EXIT_FAILURE;
  } else if (b.status === 'failed') {
    process.stderr.write(`herald: the broadcast failed: ${b.failure_reason}\n`);
    process.exitCode = EXIT_FAILURE;
  } else if (b.counts.failed > 0) {
    process.stderr.write(`herald: ${b.counts.failed} event(s) failed\n`);
    process.exitCode = EXIT_FAILURE;
  }
}

export function registerBroadcasts(program: Command): void {
  const broadcasts = program
    .command('broadcasts')
    .description(
      'send a notification type to a topic or to all contacts (remote mode: --url/--api-key or HERALD_URL/HERALD_API_KEY)',
    )
    .addHelpText(
      'after',
      examples(
        'export HERALD_URL=https://herald.example.com HERALD_API_KEY=sk_...',
        'herald broadcasts create --type release_notes --topic beta-testers --var version=2.0 --wait',
        'herald broadcasts list --status running',
        'herald broadcasts cancel 0193f1c2-...-7a1b --yes',
      ),
    );

  withMessageOptions(
    withRemote(
      broadcasts
        .command('create')
        .description('start a broadcast: one event per contact of the audience')
        .requiredOption('--type <key>', 'notification type key')
        .option('--topic <key>', 'the audience: the subscribers of this topic')
        .option('--all-contacts', 'the audience: every contact of the tenant'),
    ),
  )
    .option('--send-at <time>', 'start the fan-out at this ISO 8601 time (with an offset, e.g. 2027-12-01T09:00:00Z)')
    .option('--wait', 'wait until every event is final (a progress bar on a terminal); exit 1 when one failed')
    .option('--timeout <seconds>', 'with --wait: give up after this long', '600')
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      examples(
        'export HERALD_URL=https://herald.example.com HERALD_API_KEY=sk_...',
        'herald broadcasts create --type release_notes --topic beta-testers --var version=2.0 --wait',
        'herald broadcasts create --type maintenance --all-contacts --send-at 2027-12-01T09:00:00Z --idempotency-key maint-12-01',
      ),
    )
    .action(async (options: CreateOptions) => {
      if (Boolean(options.topic) === Boolean(options.allContacts))
        throw usageError('give exactly one audience: --topic <key> or --all-contacts');
      const timeout = timeoutOf(options);
      const { body: fields, headers } = messageFields(options);
      const body: Record<string, unknown> = {
        type: options.type,
        audience: options.topic ? { topic: options.topic } : { all_contacts: true },
        ...fields,
      };
      if (options.sendAt) body.send_at = options.sendAt;
      const client = remoteClient(options);
      const accepted = await client.call<BroadcastAccepted>('POST', paths.create(), { body, headers });
      if (!options.wait) {
        if (options.json) printJson(accepted);
        else print(`queued broadcast ${accepted.broadcast_id}`);
        return;
      }
      reportFinished(await waitForBroadcast(client, accepted.broadcast_id, timeout), options.json);
    });

  withRemote(
    broadcasts
      .command('get <broadcast_id>')
      .description('a broadcast with live counts of its events')
      .option('--wait', 'wait until it is completed or canceled (a progress bar on a terminal)')
      .option('--timeout <seconds>', 'with --wait: give up after this long', '600')
      .option('--json', 'print JSON'),
  )
    .addHelpText('after', examples('herald broadcasts get 0193f1c2-...-7a1b --wait'))
    .action(async (id: string, options: RemoteOptions & WaitOptions) => {
      const timeout = timeoutOf(options);
      const client = remoteClient(options);
      if (options.wait) return reportFinished(await waitForBroadcast(client, id, timeout), options.json);
      const b = await client.call<BroadcastResponse>('GET', paths.one(id));
      if (options.json) printJson(b);
      else printBroadcast(b);
    });

  withRemote(
    broadcasts
      .command('list')
      .description('broadcasts, newest first')
      .option('--status <status>', 'queued, running, completed or canceled')
      .option('--limit <n>', 'how many (1-200)', '50')
      .option('--cursor <cursor>', 'the next page, as printed by the previous one')
      .option('--json', 'print JSON'),
  )
    .addHelpText('after', examples('herald broadcasts list --status running --json'))
    .action(async (options: RemoteOptions & { status?: string; limit: string; cursor?: string; json?: boolean }) => {
      if (!/^\d+$/.test(options.limit)) throw usageError('--limit must be a number');
      const query = new URLSearchParams({ limit: options.limit });
      if (options.status) query.set('status', options.status);
      if (options.cursor) query.set('cursor', options.cursor);
      const page = await remoteClient(options).call<BroadcastPage>('GET', paths.list(query));
      if (options.json) return printJson(page);
      printTable(
        page.items.map((b) => ({
          ...b,
          audience: 'topic' in b.audience ? `topic:${b.audience.topic}` : 'all',
          delivered: b.counts.delivered,
          pending: b.counts.pending,
        })),
        [
          'broadcast_id',
          'type',
          'audience',
          'status',
          'targeted',
          'events_created',
          'delivered',
          'pending',
          'created_at',
        ],
      );
      if (page.next_cursor) print(`\nmore: --cursor ${page.next_cursor}`);
    });

  withRemote(
    broadcasts
      .command('cancel <broadcast_id>')
      .description('stop the fan-out and cancel the events not yet delivered')
      .option('--yes', 'do not ask for confirmation (required when stdin is not a terminal)')
      .option('--json', 'print JSON'),
  )
    .addHelpText('after', examples('herald broadcasts cancel 0193f1c2-...-7a1b --yes'))
    .action(async (id: string, options: RemoteOptions & { yes?: boolean; json?: boolean }) => {
      const client = remoteClient(options);
      await confirmUnlessYes(options.yes, {
        question: `Cancel broadcast ${id}?`,
        withoutTerminal: 'refusing to cancel without --yes (stdin is not a terminal)',
      });
      const b = await client.call<BroadcastResponse>('POST', paths.cancel(id));
      if (options.json) printJson(b);
      else print(`canceled broadcast ${id}: ${b.events_created} event(s) created, ${b.counts.canceled} canceled`);
    });
}

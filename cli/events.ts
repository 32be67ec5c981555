// herald events get|list|cancel: an event's delivery status, the activity log, and canceling events
// not final yet (remote mode).
// Like herald send, every API error (a 422 too) exits 1.
import type { Command } from 'commander';
import { print, printJson, printTable, usageError } from './support/output.ts';
import { notifications } from './support/paths.ts';
import { remoteClient, withRemote, type RemoteOptions } from './support/remote.ts';
import { summaryRow } from './send.ts';
import type { CancelResponse, EventPage, EventResponse } from '../server/schemas/notifications.ts';
import { FINAL_EVENT_STATUSES } from '../server/base/statuses.ts';
import { examples } from './support/examples.ts';

interface ListOptions extends RemoteOptions {
  type?: string;
  status?: string;
  externalId?: string;
  limit: string;
  cursor?: string;
  json?: boolean;
}

export function registerEvents(program: Command): void {
  const events = program
    .command('events')
    .description('events and their delivery status (remote mode: --url/--api-key or HERALD_URL/HERALD_API_KEY)')
    .addHelpText(
      'after',
      examples(
        'export HERALD_URL=https://herald.example.com HERALD_API_KEY=sk_...',
        'herald events list --status failed',
        'herald events get 0193f1c2-...-7a1b',
        'herald events cancel --key trial-user_42',
      ),
    );
  withRemote(
    events
      .command('get')
      .description("one event's delivery status")
      .argument('<event_id>')
      .option('--json', 'print JSON'),
  )
    .addHelpText('after', examples('herald events get 0193f1c2-...-7a1b --json'))
    .action(async (eventId: string, options: RemoteOptions & { json?: boolean }) => {
      const body = await remoteClient(options).call<EventResponse>('GET', notifications.one(eventId));
      if (options.json) return printJson(body);
      print(`event      ${body.event_id}`);
      print(`type       ${body.type}`);
      print(`recipient  ${body.external_id}`);
      print(`status     ${body.status}`);
      print(`created    ${body.created_at}`);
      if (body.send_at) print(`send at    ${body.send_at}`);
      if (body.cancellation_key) print(`cancel key ${body.cancellation_key}`);
      if (body.digest_event_id) print(`digest of  ${body.digest_event_id}`);
      print(`variables  ${JSON.stringify(body.variables)}`);
      print('');
      if (body.steps.length > 0) {
        printTable(body.steps, ['index', 'kind', 'status', 'run_at', 'reason']);
        print('');
      }
      if (body.deliveries.length === 0)
        return print(FINAL_EVENT_STATUSES.has(body.status) ? 'no deliveries' : 'no deliveries yet');
      printTable(body.deliveries, [
        'channel',
        'status',
        'reason',
        'provider',
        'attempts',
        'next_attempt_at',
        'last_error',
      ]);
    });
  withRemote(
    events
      .command('list')
      .description('the activity log, newest first')
      .option('--type <key>', 'only this notification type')
      .option(
        '--status <status>',
        'scheduled, queued, processing, delivered, partially_delivered, failed, skipped, canceled or digested',
      )
      .option('--external-id <id>', 'only this recipient')
      .option('--limit <n>', 'how many (1-200)', '50')
      .option('--cursor <cursor>', 'the next page, as printed by the previous one')
      .option('--json', 'print JSON'),
  )
    .addHelpText(
      'after',
      examples('herald events list --status failed --limit 50', 'herald events list --external-id user_42 --json'),
    )
    .action(async (options: ListOptions) => {
      if (!/^\d+$/.test(options.limit)) throw usageError('--limit must be a number');
      const query = new URLSearchParams({ limit: options.limit });
      if (options.type) query.set('type', options.type);
      if (options.status) query.set('status', options.status);
      if (options.externalId) query.set('external_id', options.externalId);
      if (options.cursor) query.set('cursor', options.cursor);
      const body = await remoteClient(options).call<EventPage>('GET', notifications.list(query));
      if (options.json) return printJson(body);
      printTable(body.items.map(summaryRow), ['event_id', 'type', 'external_id', 'status', 'created_at', 'deliveries']);
      if (body.next_cursor) print(`\nmore: --cursor ${body.next_cursor}`);
    });
  withRemote(
    events
      .command('cancel')
      .description('cancel events not final yet: one by id, or every event with a cancellation key')
      .argument('[event_id]')
      .option('--key <cancellation_key>', 'cancel every event triggered with this cancellation key')
      .option('--json', 'print JSON'),
  )
    .addHelpText(
      'after',
      examples('herald events cancel 0193f1c2-...-7a1b', 'herald events cancel --key trial-user_42 --json'),
    )
    .action(async (eventId: string | undefined, options: RemoteOptions & { key?: string; json?: boolean }) => {
      if ((eventId === undefined) === (options.key === undefined))
        throw usageError('give an event id or --key, not both');
      const client = remoteClient(options);
      if (eventId !== undefined) {
        await client.call('DELETE', notifications.one(eventId));
        if (options.json) return printJson({ canceled: 1 });
        return print(`canceled ${eventId}`);
      }
      const body = await client.call<CancelResponse>('POST', notifications.cancel(), {
        body: { cancellation_key: options.key },
      });
      if (options.json) return printJson(body);
      print(`canceled ${body.canceled} event(s)`);
    });
}

// herald send: trigger a notification from a CI script or a terminal (remote mode), optionally
// waiting until every event is final. Exit 0 delivered (or still running without --wait), 1 an API
// error, a failed delivery or an event that sent nothing (every delivery skipped), 2 a usage error.
import type { Command } from 'commander';
import { messageFields, withMessageOptions, type MessageOptions } from './support/message-options.ts';
import { CliError, EXIT_FAILURE, print, printJson, printTable, usageError } from './support/output.ts';
import { notifications } from './support/paths.ts';
import { remoteClient, withRemote, type RemoteClient, type RemoteOptions } from './support/remote.ts';
import type { EventResponse, TriggerResponse } from '../server/schemas/notifications.ts';
import { FINAL_EVENT_STATUSES } from '../server/base/statuses.ts';
import { examples } from './support/examples.ts';

interface SendOptions extends RemoteOptions, MessageOptions {
  type: string;
  to: string[];
  at?: string;
  cancellationKey?: string;
  wait?: boolean;
  timeout: string;
  json?: boolean;
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function registerSend(program: Command): void {
  withMessageOptions(
    withRemote(
      program
        .command('send')
        .description('trigger a notification (remote mode: --url/--api-key or HERALD_URL/HERALD_API_KEY)')
        .requiredOption('--type <key>', 'notification type key')
        .option('--to <external_id>', 'recipient external id (repeat for more, up to 100)', collect, []),
    ),
  )
    .option('--at <time>', 'deliver at this time (RFC 3339, e.g. 2027-01-01T09:00:00+01:00; at most 90 days ahead)')
    .option('--cancellation-key <key>', 'a key that cancels the events later: herald events cancel --key <key>')
    .option('--wait', 'wait until every event is final; exit 1 when a delivery failed or an event sent nothing')
    .option('--timeout <seconds>', 'with --wait: give up after this long', '60')
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      examples(
        'export HERALD_URL=https://herald.example.com HERALD_API_KEY=sk_...',
        'herald send --type deploy_finished --to ops_team --var version=1.4.2',
        'herald send --type login_code --to user_42 --secret code=913455 --wait --json',
        'herald send --type order_shipped --to user_42 --channel sms --wait   # exit 1 when the SMS was skipped',
        'herald send --type report --to a --to b --data-file vars.json --idempotency-key build-1234',
        'herald send --type trial_ending --to user_42 --at 2027-01-01T09:00:00Z --cancellation-key trial-user_42',
        'printf \'{"code": "%s"}\' "$CODE" | herald send --type login_code --to user_42 --secrets-file -',
      ),
    )
    .action(async (options: SendOptions) => {
      if (options.to.length === 0) throw usageError('at least one --to is required');
      const timeout = Number(options.timeout);
      if (!Number.isFinite(timeout) || timeout <= 0) throw usageError('--timeout must be a positive number of seconds');
      const fields = messageFields(options);
      const client = remoteClient(options);
      const body: Record<string, unknown> = { type: options.type, recipients: options.to, ...fields.body };
      if (options.at) {
        if (Number.isNaN(Date.parse(options.at)))
          throw usageError(`--at takes an RFC 3339 time such as 2027-01-01T09:00:00Z, got "${options.at}"`);
        body.send_at = new Date(options.at).toISOString();
      }
      if (options.cancellationKey) body.cancellation_key = options.cancellationKey;
      const headers = fields.headers;
      const accepted = await client.call<TriggerResponse>('POST', notifications.trigger(), { body, headers });
      if (!options.wait) {
        if (options.json) printJson(accepted);
        else for (const e of accepted.events) print(`${e.status} ${e.event_id} for ${e.external_id}`);
        return;
      }
      const events = await waitForEvents(
        client,
        accepted.events.map((e) => e.event_id),
        timeout * 1000,
      );
      if (options.json) printJson({ events });
      else printTable(events.map(summaryRow), ['event_id', 'external_id', 'status', 'deliveries']);
      const unfinished = events.filter((e) => !FINAL_EVENT_STATUSES.has(e.status));
      if (unfinished.length > 0) {
        // Events nobody has started on point at the workers rather than at the deliveries.
        const hint = unfinished.every((e) => e.status === 'queued')
          ? ': still queued, is a worker running? (herald start runs workers unless --role api)'
          : '';
        throw new CliError(`${unfinished.length} event(s) not final after ${timeout} s${hint}`, EXIT_FAILURE);
      }
      const failed = events.filter((e) => e.status === 'failed' || e.status === 'partially_delivered');
      if (failed.length > 0) {
        process.stderr.write(`herald: ${failed.length} event(s) had a failed delivery\n`);
        process.exitCode = EXIT_FAILURE;
      }
      const skipped = events.filter((e) => e.status === 'skipped');
      if (skipped.length > 0) {
        process.stderr.write(
          `herald: ${skipped.length} event(s) sent nothing, every delivery skipped: ${skipReasons(skipped)}\n`,
        );
        process.exitCode = EXIT_FAILURE;
      }
    });
}

async function waitForEvents(client: RemoteClient, ids: string[], timeoutMs: number): Promise<EventResponse[]> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
    const events = await Promise.all(ids.map((id) => client.call<EventResponse>('GET', notifications.one(id))));
    if (events.every((e) => FINAL_EVENT_STATUSES.has(e.status)) || Date.now() >= deadline) return events;
    await new Promise((r) => setTimeout(r, Math.min(delay, Math.max(0, deadline - Date.now()))));
  }
}

/** Why skipped events sent nothing: each channel's reason, or a skipped step's (a throttle), once each. */
function skipReasons(events: EventResponse[]): string {
  const reasons = new Set<string>();
  for (const e of events) {
    for (const d of e.deliveries) if (d.status === 'skipped') reasons.add(`${d.channel} ${d.reason ?? 'skipped'}`);
    for (const step of e.steps) if (step.status === 'skipped' && step.reason) reasons.add(step.reason);
  }
  return reasons.size > 0 ? [...reasons].join(', ') : 'no channel to deliver on';
}

export function summaryRow(e: EventResponse): Record<string, unknown> {
  const deliveries = e.deliveries
    .map((d) => `${d.channel}:${d.status}${d.reason ? `(${d.reason})` : ''}${d.last_error ? ` [${d.last_error}]` : ''}`)
    .join(', ');
  return { ...e, deliveries: deliveries || '-' };
}

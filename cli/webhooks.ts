// herald webhooks list|get|create|delete|rotate-secret|test|deliveries: a tenant's outbound webhook
// endpoints, on the host (--tenant) or remotely (--url/--api-key), the same requests. `create` and
// `rotate-secret` print the signing secret once.
import type { Command } from 'commander';
import { WEBHOOK_EVENT_TYPES, type WebhookDeliveryResponse, type WebhookResponse } from '../server/schemas/webhooks.ts';
import { confirmUnlessYes } from './support/confirm.ts';
import { print, printJson, printRecord, printTable } from './support/output.ts';
import { webhooks } from './support/paths.ts';
import type { RemoteClient } from './support/remote.ts';
import { onTarget, withTarget, type TargetOptions } from './support/target.ts';
import { examples } from './support/examples.ts';

type Page<T> = { items: T[]; next_cursor: string | null };

interface WebhookApi {
  list(): Promise<Page<WebhookResponse>>;
  get(id: string): Promise<WebhookResponse>;
  create(body: unknown): Promise<WebhookResponse & { secret: string }>;
  remove(id: string): Promise<void>;
  rotateSecret(id: string): Promise<WebhookResponse & { secret: string }>;
  test(id: string): Promise<WebhookDeliveryResponse>;
  deliveries(id: string, query: Record<string, string>): Promise<Page<WebhookDeliveryResponse>>;
}

const api = (client: RemoteClient): WebhookApi => ({
  list: () => client.call('GET', webhooks.list({ limit: '200' })),
  get: (id) => client.call('GET', webhooks.one(id)),
  create: (body) => client.call('POST', webhooks.list(), { body }),
  remove: (id) => client.call('DELETE', webhooks.one(id)),
  rotateSecret: (id) => client.call('POST', webhooks.rotateSecret(id)),
  test: (id) => client.call('POST', webhooks.test(id)),
  deliveries: (id, query) => client.call('GET', webhooks.deliveries(id, query)),
});

const collect = (value: string, previous: string[] = []) => [
  ...previous,
  ...value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
];

/** Runs `fn` with the operations of the chosen mode: the same requests, to Herald at --url or in process. */
const run = <T>(options: TargetOptions, fn: (api: WebhookApi) => Promise<T>): Promise<T> =>
  onTarget(options, (client) => fn(api(client)));

export function registerWebhooks(program: Command): void {
  const group = program
    .command('webhooks')
    .description("a tenant's outbound webhook endpoints (signed per Standard Webhooks)")
    .addHelpText(
      'after',
      `
Local mode (on the host): [--tenant <id>] [--data-dir <dir>]. Remote mode: --url and --api-key, or HERALD_URL and HERALD_API_KEY.

Event types: ${WEBHOOK_EVENT_TYPES.join(', ')}
` +
        examples(
          'herald webhooks create --tenant <id> --endpoint https://api.acme.test/herald --event-type delivery.failed --event-type email.bounced',
          'herald webhooks list --url $HERALD_URL --json',
          'herald webhooks test <webhook-id> --tenant <id>',
          'herald webhooks deliveries <webhook-id> --tenant <id> --status failed',
        ),
    );

  withTarget(group.command('list'))
    .description('list the endpoints')
    .addHelpText(
      'after',
      examples(
        'herald webhooks list --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald webhooks list --url $HERALD_URL --json',
      ),
    )
    .action(async (options: TargetOptions) => {
      const page = await run(options, (api) => api.list());
      if (options.json) return printJson(page.items);
      printTable(
        page.items.map((w) => ({
          ...w,
          event_types: w.event_types.join(','),
          enabled: w.enabled ? 'yes' : `no (${w.disabled_reason})`,
        })),
        ['id', 'url', 'event_types', 'enabled'],
      );
    });

  withTarget(group.command('get'))
    .description('show one endpoint (never its signing secret)')
    .argument('<id>', 'webhook id')
    .addHelpText(
      'after',
      examples(
        'herald webhooks get 0190f5e3-0000-7000-8000-000000000001 --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
        'herald webhooks get 0190f5e3-0000-7000-8000-000000000001 --json | jq .enabled',
      ),
    )
    .action(async (id: string, options: TargetOptions) => {
      const hook = await run(options, (api) => api.get(id));
      if (options.json) return printJson(hook);
      printRecord(hook);
    });

  withTarget(group.command('create'))
    .description('register an endpoint; prints its signing secret once')
    .requiredOption(
      '--endpoint <url>',
      'the endpoint URL (http or https; public addresses only unless allowPrivateWebhookUrls)',
    )
    .requiredOption('--event-type <type>', 'an event type to send (repeat it, or separate with commas)', collect)
    .option('--description <text>', 'what the endpoint is for', '')
    .addHelpText(
      'after',
      examples(
        'herald webhooks create --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --endpoint https://api.acme.test/herald --event-type delivery.failed,email.bounced',
        'herald webhooks create --endpoint https://api.acme.test/herald --event-type delivery.sent --description "delivery receipts" --json',
      ),
    )
    .action(async (options: TargetOptions & { endpoint: string; eventType: string[]; description: string }) => {
      const created = await run(options, (api) =>
        api.create({ url: options.endpoint, event_types: options.eventType, description: options.description }),
      );
      if (options.json) return printJson(created);
      print(`Webhook ${created.id} created for ${created.url}.`);
      print(`Signing secret (shown once, keep it safe): ${created.secret}`);
    });

  withTarget(group.command('delete'))
    .description('remove an endpoint and its delivery log')
    .argument('<id>', 'webhook id')
    .addHelpText(
      'after',
      examples(
        'herald webhooks delete 0190f5e4-0000-7000-8000-00000000000a --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --yes',
      ),
    )
    .option('--yes', 'do not ask for confirmation')
    .action(async (id: string, options: TargetOptions & { yes?: boolean }) => {
      await confirmUnlessYes(options.yes, {
        question: `Delete webhook ${id}?`,
        withoutTerminal: 'deleting a webhook needs --yes when not at a terminal',
      });
      await run(options, (api) => api.remove(id));
      if (options.json) return printJson({ deleted: id });
      print(`Webhook ${id} deleted.`);
    });

  withTarget(group.command('rotate-secret'))
    .description('replace the signing secret (the old one stops signing at once); prints the new one once')
    .argument('<id>', 'webhook id')
    .option('--yes', 'do not ask for confirmation')
    .addHelpText(
      'after',
      examples(
        'herald webhooks rotate-secret 0190f5e4-0000-7000-8000-00000000000a --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --yes',
      ),
    )
    .action(async (id: string, options: TargetOptions & { yes?: boolean }) => {
      await confirmUnlessYes(options.yes, {
        question: `Replace the signing secret of webhook ${id}? Its receiver must take the new one at once.`,
        withoutTerminal: 'rotating a secret breaks verification until the receiver has the new one: pass --yes',
      });
      const rotated = await run(options, (api) => api.rotateSecret(id));
      if (options.json) return printJson(rotated);
      print(`New signing secret of webhook ${rotated.id} (shown once, keep it safe): ${rotated.secret}`);
    });

  withTarget(group.command('test'))
    .description('send a webhook.test event to the endpoint')
    .argument('<id>', 'webhook id')
    .addHelpText(
      'after',
      examples(
        'herald webhooks test 0190f5e4-0000-7000-8000-00000000000a --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6',
      ),
    )
    .action(async (id: string, options: TargetOptions) => {
      const delivery = await run(options, (api) => api.test(id));
      if (options.json) return printJson(delivery);
      print(`Test event queued as delivery ${delivery.id}; see: herald webhooks deliveries ${id}`);
    });

  withTarget(group.command('deliveries'))
    .description("the endpoint's deliveries, newest first (the attempts log)")
    .argument('<id>', 'webhook id')
    .option('--status <status>', 'pending, succeeded or failed')
    .option('--limit <n>', 'how many (1..200)', '50')
    .addHelpText(
      'after',
      examples(
        'herald webhooks deliveries 0190f5e4-0000-7000-8000-00000000000a --tenant 0190f5e2-7b1a-7c3d-8e4f-a1b2c3d4e5f6 --status failed',
        'herald webhooks deliveries 0190f5e4-0000-7000-8000-00000000000a --limit 10 --json',
      ),
    )
    .action(async (id: string, options: TargetOptions & { status?: string; limit: string }) => {
      const query: Record<string, string> = {
        limit: options.limit,
        ...(options.status ? { status: options.status } : {}),
      };
      const page = await run(options, (api) => api.deliveries(id, query));
      if (options.json) return printJson(page.items);
      printTable(page.items, [
        'id',
        'event_type',
        'status',
        'attempts',
        'last_status_code',
        'last_error',
        'next_attempt_at',
        'created_at',
      ]);
    });
}

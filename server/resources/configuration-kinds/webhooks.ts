// Webhook endpoints in configuration as code, named by their URL: the URL, event types and
// description, never the signing secret. An endpoint the apply creates gets a new secret (read it
// once with rotate-secret); one it updates keeps its own. Whether an endpoint is enabled is its
// delivery state, not configuration: an apply neither disables nor re-enables one.
import { createWebhook, deleteWebhook, listWebhooks, updateWebhook } from '../../webhooks/endpoints.ts';
import type { WebhookResponse } from '../../schemas/webhooks.ts';
import type { ConfigurationKind, Entry, KindContext } from './types.ts';

type WebhookEntry = Entry<'webhooks'>;

/** The order of event types means nothing: sorted, so that an order of the file's own is no change. */
const entryOf = (hook: WebhookEntry | WebhookResponse): WebhookEntry => ({
  url: hook.url,
  event_types: [...hook.event_types].sort(),
  description: hook.description,
});

async function allEndpoints({ tx, tenantId }: KindContext): Promise<WebhookResponse[]> {
  const endpoints: WebhookResponse[] = [];
  let cursor: string | undefined;
  do {
    const page = await listWebhooks(tx, tenantId, { limit: 200, cursor });
    endpoints.push(...page.items);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return endpoints;
}

async function endpointIdOf(ctx: KindContext, url: string): Promise<string> {
  const found = (await allEndpoints(ctx)).find((hook) => hook.url === url);
  if (!found) throw new Error(`webhook ${url} vanished during the apply`);
  return found.id;
}

export const webhooksKind: ConfigurationKind<'webhooks'> = {
  name: 'webhooks',
  id: (entry) => entry.url,
  normalise: (entry) => entryOf(entry),
  async read(ctx) {
    return (await allEndpoints(ctx)).map(entryOf);
  },
  async create({ runtime, tx, tenantId }, entry) {
    await createWebhook(runtime, tx, tenantId, entry);
  },
  async update(ctx, current, desired) {
    const { event_types, description } = desired;
    await updateWebhook(ctx.runtime, ctx.tx, ctx.tenantId, await endpointIdOf(ctx, current.url), {
      event_types,
      description,
    });
  },
  async remove(ctx, current) {
    await deleteWebhook(ctx.tx, ctx.tenantId, await endpointIdOf(ctx, current.url));
  },
};

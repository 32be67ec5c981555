// The http channel: one signed POST per recipient to the tenant's endpoint (http_transports). The body
// is the type's http template rendered, or else the default of payload.ts with the type's message
// (its inbox template) rendered into it; the send goes through the
// failover (one candidate) for its trail, its circuit and the pause a Retry-After asks for, under the
// tenant's own key so one tenant's failing endpoint never holds another's messages.
import { renderMessageDelivery } from '../render-delivery.ts';
import { sendWithFailover } from '../failover.ts';
import { lookupOnce, type ChannelSender } from '../types.ts';
import { bodyVariables, defaultHttpBody } from './payload.ts';
import { postSigned } from './send.ts';
import { loadHttpTransport } from './transport-store.ts';

/** The provider name deliveries and the activity log show. */
export const HTTP_PROVIDER = 'http';

export const httpChannel: ChannelSender = {
  channel: 'http',
  async deliver({ runtime, em, delivery, event, contact, renderVariables, templates, lookups }) {
    const transport = await lookupOnce(lookups, `http-transport:${event.tenant_id}`, () =>
      loadHttpTransport(runtime, em, event.tenant_id),
    );
    if (!transport) return { status: 'skipped', reason: 'no_transport' };
    if (transport.state === 'unreadable') return { status: 'skipped', reason: 'credentials_unreadable' };
    const rendered = await renderMessageDelivery(em, 'http', event, contact, renderVariables, templates);
    const body = JSON.stringify(
      rendered?.http_body ??
        defaultHttpBody({
          eventId: event.id,
          type: event.type_key,
          contact,
          variables: bodyVariables(event.variables, renderVariables, transport.includeSecretVariables),
          rendered,
        }),
    );
    return sendWithFailover(runtime, [
      {
        provider: HTTP_PROVIDER,
        circuitKey: `${event.tenant_id}:http`,
        send: () =>
          postSigned(runtime, {
            url: transport.url,
            headers: transport.headers,
            secret: transport.secret,
            id: delivery.id,
            body,
          }),
      },
    ]);
  },
};

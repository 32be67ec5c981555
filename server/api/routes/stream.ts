// /v1/contacts/{id}/stream: the contact's real-time stream (Server-Sent Events), contact token only.
import { z } from 'zod';
import { AppError } from '../../base/errors.ts';
import { bearerToken } from '../auth-rules.ts';
import { defineRoute } from '../route.ts';
import { ContactIdParams } from '../../schemas/contacts.ts';
import { contactInScope } from '../../resources/contacts.ts';
import { openSseStream, parseLastEventId } from '../../channels/inbox/sse.ts';
import { MAX_STREAMS_PER_CONTACT } from '../../channels/inbox/hub.ts';

export const open = defineRoute({
  method: 'GET',
  path: '/v1/contacts/:id/stream',
  summary: "The contact's real-time stream (text/event-stream): events notification, updated and counts",
  tag: 'inbox',
  auth: 'contact',
  params: ContactIdParams,
  produces: 'text/event-stream',
  headers: [
    { name: 'Last-Event-ID', description: 'Replay the events that followed this id (sent by reconnecting clients)' },
  ],
  responses: {
    200: z
      .string()
      .describe(
        'SSE: `id: <stream event id>`, `event: notification|updated|counts`, `data: <JSON>` (an InboxItemResponse, or InboxCounts); `: heartbeat` comments',
      ),
  },
  errors: [404, 429, 503],
  handler: async ({ runtime, em, auth, params, event }) => {
    const contact = await contactInScope(em, auth!, params.id);
    const hub = runtime.streamHub;
    if (!hub || !hub.accepting)
      throw new AppError('service_unavailable', 'This process does not serve streams now; retry');
    if (hub.streamsOf(contact.id) >= MAX_STREAMS_PER_CONTACT) {
      throw new AppError(
        'rate_limited',
        `At most ${MAX_STREAMS_PER_CONTACT} open streams per contact; close one and retry`,
        { headers: { 'Retry-After': '30' } },
      );
    }
    // The stream ends when the token expires: the client renews it with its backend and reconnects.
    const claims = runtime.tokens.verify(
      bearerToken(event.req.headers.get('authorization')) ?? '',
      runtime.clock.now(),
    );
    const closeAfterMs = claims ? claims.exp * 1000 - runtime.clock.now() : 0;
    return openSseStream(hub, {
      contactId: contact.id,
      lastEventId: parseLastEventId(event.req.headers.get('last-event-id')),
      closeAfterMs,
    });
  },
});

// One Server-Sent Events response per open stream: `id:` is the stream_events id, `event:` the kind,
// `data:` the JSON payload; comments carry heartbeats. The stream ends when the client goes away,
// when the process shuts down, when the client cannot keep up, or when its contact token expires
// (the client then reconnects with a fresh token and Last-Event-ID, losing nothing).
import type { StreamHub } from './hub.ts';
import type { StreamMessage } from './log.ts';

/** A client that falls this many chunks behind is disconnected (it reconnects and replays). */
const MAX_QUEUED_CHUNKS = 1000;

export function formatSse(message: StreamMessage): string {
  return `id: ${message.id}\nevent: ${message.kind}\ndata: ${JSON.stringify(message.payload)}\n\n`;
}

export function openSseStream(
  hub: StreamHub,
  options: { contactId: string; lastEventId: bigint | null; closeAfterMs: number },
): Response {
  const encoder = new TextEncoder();
  let unsubscribe: (() => void) | null = null;
  let expiry: NodeJS.Timeout | null = null;
  let closed = false;
  const stop = () => {
    if (closed) return false;
    closed = true;
    if (expiry) clearTimeout(expiry);
    unsubscribe?.();
    return true;
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (text: string) => {
        if (closed) return;
        controller.enqueue(encoder.encode(text));
        if ((controller.desiredSize ?? 0) < -MAX_QUEUED_CHUNKS) end();
      };
      const end = () => {
        if (stop()) controller.close();
      };
      // Tells EventSource-style clients how long to wait before reconnecting.
      controller.enqueue(encoder.encode('retry: 2000\n\n'));
      unsubscribe = hub.subscribe(options.contactId, options.lastEventId, {
        send: (message) => write(formatSse(message)),
        comment: (text) => write(`: ${text}\n\n`),
        close: end,
      });
      expiry = setTimeout(end, Math.min(Math.max(options.closeAfterMs, 0), 2 ** 31 - 1));
      expiry.unref();
    },
    cancel() {
      stop();
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      // Reverse proxies (nginx) must not buffer the stream.
      'x-accel-buffering': 'no',
    },
  });
}

/** Last-Event-ID as a stream_events id; anything else (absent, malformed) means "no replay". */
export function parseLastEventId(header: string | null): bigint | null {
  if (!header || !/^\d{1,19}$/.test(header.trim())) return null;
  return BigInt(header.trim());
}

// The browser client's Server-Sent Events parser (/sdk/herald.js runs in Node too): the WHATWG
// event-stream format, fed in arbitrary chunks as fetch delivers them.
import { describe, expect, it } from 'vitest';
import { createSseParser, type SseMessage } from '../../../server/static/sdk/herald.js';

function parseAll(chunks: string[]): SseMessage[] {
  const messages: SseMessage[] = [];
  const feed = createSseParser((m) => messages.push(m));
  for (const chunk of chunks) feed(chunk);
  return messages;
}

describe('createSseParser', () => {
  it('parses Herald events with id, event and JSON data, skipping heartbeat comments', () => {
    const stream = 'retry: 2000\n\n: heartbeat\n\nid: 7\nevent: counts\ndata: {"unread_count":2}\n\n';
    expect(parseAll([stream])).toEqual([
      { event: 'message', data: null, id: null, retry: 2000 },
      { event: 'counts', data: '{"unread_count":2}', id: '7', retry: null },
    ]);
  });

  it('gives the same events whatever the chunk boundaries, including a CRLF split in two', () => {
    const stream =
      'id: 1\r\nevent: notification\r\ndata: {"a":1}\r\n\r\nid: 2\revent: updated\rdata: x\r\rdata: line one\ndata: line two\n\n';
    const whole = parseAll([stream]);
    expect(whole).toEqual([
      { event: 'notification', data: '{"a":1}', id: '1', retry: null },
      { event: 'updated', data: 'x', id: '2', retry: null },
      { event: 'message', data: 'line one\nline two', id: null, retry: null },
    ]);
    for (let size = 1; size <= 7; size += 1) {
      const chunks = stream.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g'))!;
      expect(parseAll(chunks), `chunks of ${size}`).toEqual(whole);
    }
  });

  it('ignores unknown fields, a retry that is not a number and an id containing NUL', () => {
    expect(parseAll(['foo: bar\nretry: soon\nid: a\u0000b\ndata:no-space\n\n'])).toEqual([
      { event: 'message', data: 'no-space', id: null, retry: null },
    ]);
  });

  it('dispatches nothing for an unterminated event', () => {
    expect(parseAll(['id: 3\nevent: counts\ndata: {}\n'])).toEqual([]);
  });
});

// Herald's quoted-printable gives exactly nodemailer's encode + wrap, on random texts built from the
// characters each rule of the two turns on, and on an email's HTML part.
import { describe, expect, it } from 'vitest';
import * as qp from 'nodemailer/lib/qp';
import { quotedPrintable } from '../../../server/channels/email/quoted-printable.ts';
import { renderEmail } from '../../../server/channels/render.ts';

/** A small seeded generator (mulberry32): the same texts on every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Letters and hex digits, the break characters, "=", line breaks alone and as pairs, whitespace,
// control characters, two- three- and four-byte characters, and a lone surrogate.
const PIECES = [
  'a',
  'Z',
  'f',
  'F',
  '0',
  '9',
  'x',
  ' ',
  '\t',
  '.',
  ',',
  '!',
  '?',
  '=',
  '=3D',
  '\r',
  '\n',
  '\r\n',
  '\x00',
  '\x7f',
  '\x0b',
  'é',
  '€',
  '🎉',
  '\ud800',
  '<p class="x">',
  ' \n',
];

function randomText(next: () => number): string {
  const length = Math.floor(next() * 300);
  let text = '';
  // Runs of one piece make long lines, long words and long escapes.
  while (text.length < length) {
    const piece = PIECES[Math.floor(next() * PIECES.length)]!;
    text += next() < 0.2 ? piece.repeat(1 + Math.floor(next() * 40)) : piece;
  }
  return text;
}

describe('quotedPrintable', () => {
  it("gives nodemailer's output on 20,000 random texts at three line lengths", () => {
    const next = random(2045);
    const differing: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const text = randomText(next);
      const lineLength = [76, 20, 7][i % 3]!;
      if (quotedPrintable(text, lineLength) !== qp.wrap(qp.encode(text), lineLength))
        differing.push(JSON.stringify([text, lineLength]));
    }
    expect(differing.slice(0, 5)).toEqual([]);
  });

  it("gives nodemailer's output for an email's HTML part and text part", async () => {
    const email = await renderEmail(
      {
        id: 't',
        subject: 'Order {{ order }}',
        content: '<p>Hello {{ contact.name }}, order <b>{{ order }}</b> is on its way. Ça arrive 🎉</p>',
        language: 'en',
      } as never,
      { id: 'b', key: 'default', values: { name: 'Acme' }, sender: null, is_default: true } as never,
      { order: 'A-1', contact: { name: 'Zoë' } },
    );
    for (const part of [email.html, email.text]) expect(quotedPrintable(part, 76)).toBe(qp.wrap(qp.encode(part), 76));
    expect(email.html.length).toBeGreaterThan(1000);
  });
});

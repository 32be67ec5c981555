// The channel list is declared once, in server/schemas/common.ts. The browser files are served as they
// are (no build step), so each keeps the names it shows or the order it sorts by: held here to the
// server's list, in its order, so that a channel added on the server fails this test until they follow.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CHANNELS } from '../../../server/schemas/common.ts';

const source = (path: string) => readFileSync(new URL(`../../../server/static/${path}`, import.meta.url), 'utf8');

/** The keys of an object literal or the items of an array literal assigned to `name` in `text`. */
function declared(text: string, name: string): string[] {
  const match = new RegExp(`const ${name} = ([\\[{][^\\]}]*[\\]}])`).exec(text);
  if (!match) throw new Error(`${name} not found`);
  const literal = match[1]!;
  return literal.startsWith('[')
    ? [...literal.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!)
    : [...literal.matchAll(/([a-z_]+):/g)].map((m) => m[1]!);
}

describe('the browser files follow the server channel list', () => {
  it.each([
    ['console/kit.js', 'CHANNEL_NAMES'],
    ['sdk/herald.js', 'CHANNEL_ORDER'],
    ['sdk/herald-inbox.js', 'CHANNEL_LABELS'],
  ])('%s %s', (path, name) => {
    expect(declared(source(path), name)).toEqual([...CHANNELS]);
  });
});

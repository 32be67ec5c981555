// The template engine's plain form: templates of text and `{{ name.path }}` outputs render without
// liquidjs, and must give exactly what liquidjs gives (or fail as it fails) for every value.
import { describe, expect, it } from 'vitest';
import {
  renderString,
  renderStringWithLiquid,
  UnfilledSlotError,
  type RenderMode,
} from '../../server/base/template-engine.ts';

const SOURCES = [
  'Hello {{ contact.name }}',
  'Order {{order}} shipped',
  '{{ order }}',
  '{{ a }}{{ b }}',
  'Hi {{ contact.name }}, order {{ order.id }} of {{ brand.name }} <b>now</b> & "then"',
  '{{ deep.a.b.c }}!',
  'no outputs at all',
  '',
  '{{\n  order\n}}',
  // Not plain: liquidjs renders these whatever the values.
  '{{ order | upcase }}',
  '{{- order -}} x',
  '{% if order %}{{ order }}{% endif %}',
  '{{ items.size }}',
  '{{ items.first }}',
  '{{ items[0] }}',
  'open {{ and } close }} {{ order }}',
  '{{ true }} {{ nil }} {{ empty }} {{ blank }} {{ null }} {{ false }}',
  '{{ size }}',
];

const VALUES: unknown[] = [
  'plain',
  '',
  '<script>alert("x")</script> & \'quotes\'',
  'émoji 🎉',
  0,
  -0,
  42,
  3.5,
  1e21,
  Number.NaN,
  true,
  false,
  null,
  ['a', 1, null],
  { id: 'nested' },
  'x'.repeat(100_001),
];

function contextsFor(value: unknown): Record<string, unknown>[] {
  return [
    {
      contact: { name: value },
      order: value,
      a: value,
      b: 'b',
      brand: { name: value },
      deep: { a: { b: { c: value } } },
      items: [value],
    },
    { true: value, false: value, nil: value, null: value, empty: value, blank: value, size: value },
    { contact: {}, order: { id: value }, a: value, brand: {}, deep: { a: null }, items: value },
    { contact: { name: value }, order: value, brand: { name: value }, deep: { a: [{ b: { c: value } }] } },
  ];
}

function outcome(render: () => string): string {
  try {
    return `ok:${render()}`;
  } catch (error) {
    return `${(error as Error).name}:${(error as Error).message}:${error instanceof UnfilledSlotError ? error.slot : ''}`;
  }
}

describe('renderString', () => {
  it('renders every source as liquidjs does, in both modes, for every kind of value', () => {
    let compared = 0;
    for (const mode of ['text', 'html'] as RenderMode[]) {
      for (const source of SOURCES) {
        for (const value of VALUES) {
          for (const context of contextsFor(value)) {
            expect(
              outcome(() => renderString(source, context, mode)),
              `${mode} ${JSON.stringify(source)} with ${JSON.stringify(value)?.slice(0, 40)}`,
            ).toBe(outcome(() => renderStringWithLiquid(source, context, mode)));
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(2 * SOURCES.length * VALUES.length * 4);
  });

  it('escapes values in HTML and leaves them as they are in text', () => {
    const context = { order: `<a href="x">'A&B'</a>`, contact: { name: 'Ann' } };
    expect(renderString('Order {{ order }} for {{ contact.name }}', context, 'html')).toBe(
      'Order &lt;a href=&#34;x&#34;&gt;&#39;A&amp;B&#39;&lt;/a&gt; for Ann',
    );
    expect(renderString('Order {{ order }} for {{ contact.name }}', context, 'text')).toBe(
      `Order <a href="x">'A&B'</a> for Ann`,
    );
  });

  it('names the unfilled slot of a missing variable or contact field', () => {
    expect(() => renderString('Hi {{ contact.name }}', { contact: {} }, 'text')).toThrow(
      expect.objectContaining({ slot: 'contact.name' }),
    );
    expect(() => renderString('Order {{ order.id }}', {}, 'text')).toThrow(expect.objectContaining({ slot: 'order' }));
  });

  it('reads own properties only, never inherited ones', () => {
    const inherited = Object.create({ name: 'from the prototype' }) as Record<string, unknown>;
    expect(() => renderString('{{ contact.name }}', { contact: inherited }, 'text')).toThrow(UnfilledSlotError);
    expect(() => renderString('{{ contact.constructor }}', { contact: {} }, 'text')).toThrow(UnfilledSlotError);
  });
});

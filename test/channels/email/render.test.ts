// An email's HTML fills the brand layout rendered once per look (renderEmail): it must be the markup
// React renders for the whole layout, whatever the subject, the content and the brand hold.
import { describe, expect, it } from 'vitest';
import { BrandLayout } from '../../../templates/layouts/brand-layout.ts';
import { renderString } from '../../../server/base/template-engine.ts';
import { renderEmail, renderEmailElement } from '../../../server/channels/render.ts';
import { isSelfContained } from '../../../server/channels/self-contained-markup.ts';
import type { BrandRow, EmailTemplateRow } from '../../../server/channels/resolve.ts';

function brand(values: Record<string, unknown>): BrandRow {
  return { id: 'b', key: 'default', values, sender: null, is_default: true } as unknown as BrandRow;
}

function template(subject: string, content: string, language = 'en'): EmailTemplateRow {
  return {
    id: 't',
    notification_type_key: 'order',
    brand_key: 'default',
    language,
    subject,
    content,
  } as unknown as EmailTemplateRow;
}

/** The whole layout rendered by React for this email. */
async function fullRender(t: EmailTemplateRow, b: BrandRow, subject: string, contentHtml: string) {
  const name = typeof b.values.name === 'string' ? b.values.name : null;
  return renderEmailElement(
    BrandLayout({
      name,
      colour: b.values.colour,
      logoUrl: b.values.logo_url,
      language: t.language,
      title: subject,
      contentHtml,
    }),
  );
}

const brands = [
  brand({ name: 'Acme', colour: '#123456' }),
  brand({ name: 'Café & "Co" <b>', colour: 'not a colour', logo_url: 'https://cdn.example.test/logo.png?a=1&b=2' }),
  brand({}),
  brand({ name: '   ', logo_url: 'javascript:alert(1)' }),
];

const emails: Array<{ subject: string; content: string; language?: string }> = [
  {
    subject: 'Order {{ order }} shipped',
    content: '<p>Hello {{ contact.name }}, order <b>{{ order }}</b> is on its way.</p>',
  },
  {
    subject: 'Tom & Jerry\'s <deal> "now"',
    content: '<h1>Big</h1><ul><li>one</li><li>two</li></ul><a href="https://example.test/?a=1&amp;b=2">link</a>',
  },
  { subject: 'Prices in $& and $1 and $$', content: "<p>$& $` $' $$ {{ order }}</p>" },
  { subject: 'Ünïcödé ✓ 🚀', content: 'plain text without tags, ünïcödé ✓ 🚀', language: 'fr' },
  { subject: '', content: '<table><tr><td>cell</td></tr></table><!-- a comment -->' },
  { subject: 'A NUL \u0000 here', content: '<p>and \u0000 there</p>' },
  {
    subject: 'Images',
    content:
      '<img src="https://example.test/a.png" alt="a"><link rel="preload" as="image" href="https://example.test/a.png">',
  },
];

describe('renderEmail', () => {
  it('writes the markup and text part that rendering the whole layout gives, for every brand and content', async () => {
    let compared = 0;
    for (const b of brands) {
      for (const e of emails) {
        const t = template(e.subject, e.content, e.language);
        const context = { order: 'A-1 <&>', contact: { name: 'Zoë "Z" O\'Neil & <co>' } };
        const rendered = await renderEmail(t, b, context);
        const whole = await fullRender(t, b, rendered.subject, renderString(t.content, context, 'html'));
        expect(rendered.html).toBe(whole.html);
        expect(rendered.text).toBe(whole.text);
        compared++;
      }
    }
    expect(compared).toBe(brands.length * emails.length);
  });

  it('gives the text part of the whole email for generated content, whether its content converts alone or only inside the layout', async () => {
    // Pieces of content markup: plain and nested elements whose text converts alone, and the kinds
    // that must be converted inside the layout (stray end tags, comments, raw text, tables, broken tags).
    const pieces = [
      '<p>Hello {{ contact.name }}</p>',
      'plain words',
      '  ',
      '\n',
      '<b>bold</b> and <i>it</i>',
      '<br>',
      '<hr>',
      '<h2>Heading</h2>',
      '<ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>',
      '<ol><li>a<li>b</ol>',
      '<div>block</div>',
      '<div><div>deep</div></div>',
      '<a href="https://example.test/?a=1&amp;b=2">link</a>',
      '<a href=https://example.test/x>bare</a>',
      '<img src="https://example.test/a.png" alt="a">',
      '<pre>  spaced\n  lines </pre>',
      '<blockquote>quoted</blockquote>',
      '<p>open paragraph',
      '<span>unclosed span',
      '&amp; &lt;tag&gt; &#x2713;',
      '<p data-skip-in-text="true">skipped</p>',
      '<div/>',
      '<P CLASS="x">upper</P>',
      '</p>',
      '</br>',
      '</span>',
      '<p><div>in p</div></p>',
      '</div>',
      '</div>after',
      '<span><div>x</span></div>',
      '<!-- comment -->',
      '<!-- unclosed',
      '<style>p{}</style>',
      '<script>1</script>',
      '<table><tr><td>cell</td></tr></table>',
      '<td>stray cell',
      '</td>',
      '<body>body</body>',
      '<title>t</title>',
      'a < b',
      '<b',
      '<a href="x>',
      '<textarea>raw',
      '<svg><rect/></svg>',
      '<h1>Top</h1>',
      '<br>after a break',
      '<pre>\n\nlead</pre>',
      '<p></p>',
      '<div></div>',
      '<li>loose item',
      '<p><li>x</p>',
      '<h3>end</h3>',
      '<p>a<p>b<div>c</div></p>',
      '<ul><li>a<li>b</ul>',
      '<p><div>x</p></div>',
    ];
    let seed = 7;
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const contents = Array.from({ length: 400 }, () =>
      Array.from({ length: 1 + next(5) }, () => pieces[next(pieces.length)]!).join(next(2) ? '' : '\n'),
    );
    let alone = 0;
    for (const [i, content] of contents.entries()) {
      const b = brands[i % brands.length]!;
      const t = template('Subject', content);
      const context = { contact: { name: 'Zoë & <co>' } };
      const rendered = await renderEmail(t, b, context);
      const contentHtml = renderString(t.content, context, 'html');
      const whole = await fullRender(t, b, rendered.subject, contentHtml);
      expect(rendered.text, content).toBe(whole.text);
      if (isSelfContained(contentHtml)) alone++;
    }
    expect(alone).toBeGreaterThan(50);
    expect(alone).toBeLessThan(contents.length - 50);
  });

  it('converts alone only markup that parses the same inside the layout', () => {
    for (const html of [
      '<p>a</p>',
      'text',
      '<div><b>x</b></div>',
      '<p>open',
      '<a href="?a=1&amp;b" title=\'"<>\'>x</a>',
      '</p></span>',
      '<br/><img src=x>',
      '<p><div></p></div>',
    ]) {
      expect(isSelfContained(html), html).toBe(true);
    }
    for (const html of [
      '</div>',
      '<span><div></span></div>',
      '<!-- c -->',
      '<table></table>',
      '<td>',
      '<style></style>',
      'a < b',
      '<b',
      '<a href="x>',
      '<body>',
      '</ p>',
    ]) {
      expect(isSelfContained(html), html).toBe(false);
    }
  });

  it('escapes the values it fills in, and renders a second email of the same look with its own values', async () => {
    const t = template('Hi {{ contact.name }}', '<p>{{ contact.name }}</p>');
    const first = await renderEmail(t, brands[0]!, { contact: { name: '<script>x</script>' } });
    const second = await renderEmail(t, brands[0]!, { contact: { name: 'Bob' } });
    expect(first.html).toContain('<title>Hi &lt;script&gt;x&lt;/script&gt;</title>');
    expect(first.html).toContain('<p>&lt;script&gt;x&lt;/script&gt;</p>');
    expect(first.html).not.toContain('<script>');
    expect(second.html).toContain('<title>Hi Bob</title>');
    expect(second.html).toContain('<p>Bob</p>');
    expect(second.html).not.toContain('script');
    expect(first.html).not.toMatch(/herald-(title|content)-/);
  });
});

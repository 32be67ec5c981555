// The brand's email layout (react-email, without JSX: Node runs this file directly): a header in the
// brand colour with its logo (or its name), the template's rendered HTML fragment, and a footer with
// the brand name. Brand values come from the database, so they are re-checked here: a colour that is
// not a hex colour or a logo URL that is not http(s) is ignored rather than written into the markup.
import { createElement as h, type ReactElement } from 'react';
// Each component from its own package: @react-email/components would also load Tailwind, Markdown
// and Prism into every process that sends email, and these layouts use none of them.
import { Body } from '@react-email/body';
import { Container } from '@react-email/container';
import { Head } from '@react-email/head';
import { Html } from '@react-email/html';
import { Img } from '@react-email/img';
import { Section } from '@react-email/section';
import { Text } from '@react-email/text';

export const DEFAULT_BRAND_COLOUR = '#1f2937';
const HEX_COLOUR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;

export interface BrandLayoutProps {
  /** The brand's display name (values.name). */
  name: string | null;
  /** values.colour */
  colour: unknown;
  /** values.logo_url */
  logoUrl: unknown;
  /** The rendered subject (the document title). */
  title: string;
  /** The template content, rendered: trusted tenant markup with escaped variable values. */
  contentHtml: string;
  language?: string;
}

function safeColour(value: unknown): string {
  return typeof value === 'string' && HEX_COLOUR.test(value) ? value : DEFAULT_BRAND_COLOUR;
}

function safeLogo(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.toString() : null;
  } catch {
    return null;
  }
}

export function BrandLayout(props: BrandLayoutProps): ReactElement {
  const colour = safeColour(props.colour);
  const logo = safeLogo(props.logoUrl);
  const name = props.name?.trim() || null;
  const header = logo
    ? h(Img, { src: logo, alt: name ?? '', height: 40, style: { display: 'block', maxHeight: '40px', border: 0 } })
    : name
      ? h(Text, { style: { margin: 0, color: '#ffffff', fontSize: '20px', fontWeight: 700 } }, name)
      : null;
  return h(
    Html,
    { lang: props.language ?? 'en' },
    h(Head, null, h('title', null, props.title)),
    h(
      Body,
      {
        style: {
          margin: 0,
          padding: '24px 0',
          backgroundColor: '#f4f4f5',
          fontFamily: 'Helvetica, Arial, sans-serif',
          color: '#18181b',
        },
      },
      h(
        Container,
        { style: { maxWidth: '600px', backgroundColor: '#ffffff', borderRadius: '6px', overflow: 'hidden' } },
        h(
          Section,
          { style: { backgroundColor: colour, padding: '16px 24px', borderTop: `4px solid ${colour}` } },
          header,
        ),
        h(
          Section,
          { style: { padding: '24px', fontSize: '15px', lineHeight: '1.5' } },
          h('div', { dangerouslySetInnerHTML: { __html: props.contentHtml } }),
        ),
        name
          ? h(
              Section,
              { style: { padding: '12px 24px', borderTop: '1px solid #e4e4e7' } },
              h(Text, { style: { margin: 0, fontSize: '12px', color: '#71717a' } }, name),
            )
          : null,
      ),
    ),
  );
}

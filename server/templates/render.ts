// Rendering templates into what a channel sends. Inbox items are plain text (title, body, action URL);
// emails are a subject, the content in the brand's react-email layout, and a derived text part.
import type { ReactElement } from 'react';
import type { render as renderReactEmail } from '@react-email/render';
import type { BrandLayout as BrandLayoutOf } from '../../templates/layouts/brand-layout.ts';
import { renderString } from './engine.ts';
import type { BrandRow, EmailTemplateRow, InboxTemplateRow } from './resolve.ts';

export interface RenderedInbox {
  title: string;
  body: string;
  action_url: string | null;
}

/**
 * The rendered action URL if it is safe to hand to clients: an absolute http(s) URL, or a path on the
 * client's own site ("/orders/1"). Anything else (javascript:, data:, "//evil.example") becomes null:
 * the template is checked when written, but variables rendered into it are only known here.
 */
export function safeActionUrl(value: string): string | null {
  const url = value.trim();
  if (url.startsWith('/') && !url.startsWith('//') && !url.startsWith('/\\')) return url;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.toString() : null;
  } catch {
    return null;
  }
}

/** Throws UnfilledSlotError naming the first placeholder the context does not fill. */
export function renderInbox(template: InboxTemplateRow, context: Record<string, unknown>): RenderedInbox {
  return {
    title: renderString(template.title, context, 'text'),
    body: renderString(template.content, context, 'text'),
    action_url: template.action_url ? safeActionUrl(renderString(template.action_url, context, 'text')) : null,
  };
}

// Headings keep their case in the text part (html-to-text shouts them by default).
const HEADING_SELECTORS = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } }));

interface EmailRenderer {
  render: typeof renderReactEmail;
  BrandLayout: typeof BrandLayoutOf;
  /** The text part from the email's HTML: react-email's plain-text conversion, its selectors compiled once. */
  toText: (html: string) => string;
}

/**
 * react-email and React, loaded when the first email is rendered: they are the largest modules Herald
 * has (tens of MB resident), and a process that never renders an email (an API-only process, an
 * install without email) never needs them. The text part is converted from the HTML already rendered,
 * not by render(..., { plainText: true }), which renders the element a second time and compiles
 * html-to-text's selectors on every call.
 */
let emailRenderer: Promise<EmailRenderer> | null = null;

function loadEmailRenderer(): Promise<EmailRenderer> {
  emailRenderer ??= Promise.all([import('@react-email/render'), import('html-to-text'), import('../../templates/layouts/brand-layout.ts')]).then(
    ([{ render, plainTextSelectors }, { compile }, { BrandLayout }]) => ({
      render,
      BrandLayout,
      toText: compile({ wordwrap: false, selectors: [...plainTextSelectors, ...HEADING_SELECTORS] }),
    }),
  );
  return emailRenderer;
}

export interface RenderedEmail {
  subject: string;
  html: string;
  text: string;
}

/**
 * An email from a template: the subject rendered as text (line breaks from values folded to spaces,
 * since it becomes a header), the content rendered as HTML (every value escaped) inside the brand's
 * layout, and the text part derived from that HTML. Throws UnfilledSlotError naming the first
 * placeholder the context does not fill, TemplateError for any other template failure.
 */
export async function renderEmail(template: EmailTemplateRow, brand: BrandRow, context: Record<string, unknown>): Promise<RenderedEmail> {
  const subject = renderString(template.subject, context, 'text').replace(/\s*[\r\n]+\s*/g, ' ').trim();
  const contentHtml = renderString(template.content, context, 'html');
  const name = typeof brand.values.name === 'string' ? brand.values.name : null;
  const { BrandLayout } = await loadEmailRenderer();
  const { html, text } = await renderEmailElement(BrandLayout({ name, colour: brand.values.colour, logoUrl: brand.values.logo_url, title: subject, contentHtml, language: template.language }));
  return { subject, html, text };
}

/** The HTML of a react-email element and the text part derived from it: every email Herald sends is made here. */
export async function renderEmailElement(element: ReactElement): Promise<{ html: string; text: string }> {
  const { render, toText } = await loadEmailRenderer();
  const html = await render(element);
  return { html, text: toText(html).trim() };
}

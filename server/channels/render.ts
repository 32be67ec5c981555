// Rendering templates into what a channel sends. Inbox items are plain text (title, body, action URL);
// emails are a subject, the content in the brand's react-email layout, and a derived text part; an
// SMS is one text; a chat message is Markdown and the providers' own blocks; an HTTP body is JSON.
import { randomBytes } from 'node:crypto';
import type { ReactElement } from 'react';
import type { render as renderReactEmail } from '@react-email/render';
import type { BrandLayout as BrandLayoutOf, BrandLayoutProps } from '../../templates/layouts/brand-layout.ts';
import { renderString } from '../base/template-engine.ts';
import type { JsonValue } from '../schemas/common.ts';
import { isSelfContained } from './self-contained-markup.ts';
import type {
  BrandRow,
  ChatBlocks,
  ChatTemplateRow,
  EmailTemplateRow,
  HttpTemplateRow,
  InboxTemplateRow,
  SmsTemplateRow,
} from './resolve.ts';

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

/**
 * Throws UnfilledSlotError naming the first placeholder the context does not fill. `renderText`
 * renders one of the template's strings with the context (a run may remember what it rendered).
 */
export function renderInbox(
  template: InboxTemplateRow,
  context: Record<string, unknown>,
  renderText: (source: string) => string = (source) => renderString(source, context, 'text'),
): RenderedInbox {
  return {
    title: renderText(template.title),
    body: renderText(template.content),
    action_url: template.action_url ? safeActionUrl(renderText(template.action_url)) : null,
  };
}

type RenderText = (source: string) => string;

/** An SMS template's text: its content rendered as plain text. Throws as renderInbox does. */
export function renderSms(
  template: SmsTemplateRow,
  context: Record<string, unknown>,
  renderText: RenderText = (source) => renderString(source, context, 'text'),
): { text: string } {
  return { text: renderText(template.content) };
}

export interface RenderedChat {
  /** The content rendered: Markdown, the values in it as they are. */
  markdown: string;
  /** Each provider's blocks rendered, or null when the template has none. */
  blocks: ChatBlocks | null;
}

/** A chat template rendered: the Markdown content, and every string leaf of its blocks as text. */
export function renderChat(
  template: ChatTemplateRow,
  context: Record<string, unknown>,
  renderText: RenderText = (source) => renderString(source, context, 'text'),
): RenderedChat {
  return {
    markdown: renderText(template.content),
    blocks: template.blocks
      ? (renderJsonTemplate(template.blocks as JsonValue, context, renderText) as ChatBlocks)
      : null,
  };
}

/** An HTTP template's body rendered (renderJsonTemplate, whole placeholders taking their values). */
export function renderHttp(
  template: HttpTemplateRow,
  context: Record<string, unknown>,
  renderText: RenderText = (source) => renderString(source, context, 'text'),
): { body: JsonValue } {
  return { body: renderJsonTemplate(template.body, context, renderText, { wholeValues: true }) };
}

/** `{{ a.b.c }}` and nothing else around it. */
const WHOLE_PLACEHOLDER = /^\{\{\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\}\}$/;
/** Names the engine reads its own way (its literals first, the size/first/last shorthands anywhere). */
const ENGINE_NAMES = new Set(['true', 'false', 'nil', 'null', 'empty', 'blank', 'size', 'first', 'last']);

/**
 * A JSON template rendered into JSON: the structure and the keys stay as written, and every string
 * leaf is a template rendered as plain text into a string. The output is valid JSON whatever the
 * values hold, since a value only ever becomes (part of) a string, which JSON.stringify escapes when
 * the result is sent. With `wholeValues`, a leaf that is one placeholder alone ("{{ order }}") takes
 * the value itself (a number, an object, a list), so structured variables pass as they are.
 * Throws UnfilledSlotError or TemplateError as renderString does.
 */
export function renderJsonTemplate(
  template: JsonValue,
  context: Record<string, unknown>,
  renderText: RenderText = (source) => renderString(source, context, 'text'),
  options: { wholeValues?: boolean } = {},
): JsonValue {
  const render = (node: JsonValue): JsonValue => {
    if (typeof node === 'string') {
      if (options.wholeValues) {
        const value = wholeValue(node, context);
        if (value !== undefined) return value;
      }
      return renderText(node);
    }
    if (Array.isArray(node)) return node.map(render);
    if (node !== null && typeof node === 'object') {
      const out: Record<string, JsonValue> = {};
      for (const [key, value] of Object.entries(node)) out[key] = render(value);
      return out;
    }
    return node;
  };
  return render(template);
}

/** The value a leaf that is one placeholder alone names; undefined when it is not one, or the context lacks it (renderText then renders, or names the unfilled slot). */
function wholeValue(source: string, context: Record<string, unknown>): JsonValue | undefined {
  const match = WHOLE_PLACEHOLDER.exec(source);
  if (!match) return undefined;
  const path = match[1]!.split('.');
  if (path.some((key) => ENGINE_NAMES.has(key))) return undefined;
  let value: unknown = context;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key))
      return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value === undefined ? undefined : (value as JsonValue);
}

// Headings keep their case in the text part (html-to-text shouts them by default).
const HEADING_SELECTORS = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({
  selector,
  options: { uppercase: false },
}));

interface EmailRenderer {
  render: typeof renderReactEmail;
  BrandLayout: typeof BrandLayoutOf;
  /** The text part from the email's HTML: react-email's plain-text conversion, its selectors compiled once. */
  toText: (html: string) => string;
  /**
   * toText, with the layout's text before and after the content stood in for by two blocks that end
   * and start with these line breaks (textBetween); compiled once per pair.
   */
  toTextBetween: (linesBefore: number, linesAfter: number) => (html: string) => string;
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
  emailRenderer ??= Promise.all([
    import('@react-email/render'),
    import('html-to-text'),
    import('../../templates/layouts/brand-layout.ts'),
  ]).then(([{ render, plainTextSelectors }, { compile }, { BrandLayout }]) => {
    const selectors = [...plainTextSelectors, ...HEADING_SELECTORS];
    const between = new Map<string, (html: string) => string>();
    return {
      render,
      BrandLayout,
      toText: compile({ wordwrap: false, selectors }),
      toTextBetween(linesBefore, linesAfter) {
        const key = `${linesBefore} ${linesAfter}`;
        let convert = between.get(key);
        if (!convert) {
          const standIns = [
            {
              selector: TEXT_BEFORE,
              format: 'block',
              options: { leadingLineBreaks: 1, trailingLineBreaks: linesBefore },
            },
            {
              selector: TEXT_AFTER,
              format: 'block',
              options: { leadingLineBreaks: linesAfter, trailingLineBreaks: 1 },
            },
          ];
          convert = compile({ wordwrap: false, selectors: [...selectors, ...standIns] });
          between.set(key, convert);
        }
        return convert;
      },
    };
  });
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
export async function renderEmail(
  template: EmailTemplateRow,
  brand: BrandRow,
  context: Record<string, unknown>,
): Promise<RenderedEmail> {
  const subject = renderString(template.subject, context, 'text')
    .replace(/\s*[\r\n]+\s*/g, ' ')
    .trim();
  const contentHtml = renderString(template.content, context, 'html');
  const name = typeof brand.values.name === 'string' ? brand.values.name : null;
  const look: LayoutLook = {
    name,
    colour: brand.values.colour,
    logoUrl: brand.values.logo_url,
    language: template.language,
  };
  const shell = await layoutShell(look);
  if (!shell || !fitsShell(subject) || !fitsShell(contentHtml)) {
    const { BrandLayout } = await loadEmailRenderer();
    return { subject, ...(await renderEmailElement(BrandLayout({ ...look, title: subject, contentHtml }))) };
  }
  const html =
    shell.beforeTitle + escapeText(subject) + shell.betweenTitleAndContent + contentHtml + shell.afterContent;
  const text = shell.text && isSelfContained(contentHtml) ? await textBetween(shell.text, contentHtml) : null;
  return { subject, html, text: text ?? (await textPart(html)) };
}

/** The HTML of a react-email element and the text part derived from it (system emails, and any email the layout shell cannot take). */
export async function renderEmailElement(element: ReactElement): Promise<{ html: string; text: string }> {
  const { render } = await loadEmailRenderer();
  const html = await render(element);
  return { html, text: await textPart(html) };
}

async function textPart(html: string): Promise<string> {
  const { toText } = await loadEmailRenderer();
  return toText(html).trim();
}

// The brand layout's markup around the title and the content is the same for every email of a brand
// look and language, and rendering it with React is most of an email's rendering time. So it is
// rendered once per look, with two markers where the title and the content go, and each email fills
// them: the title escaped as React escapes text, the content as is (the layout takes it as raw HTML).
// The markers are random per process, and a shell in which they do not come out once each is not
// used. Content that react-email's render would rewrite after React (a <link> tag, a NUL character)
// takes the full render.

type LayoutLook = Omit<BrandLayoutProps, 'title' | 'contentHtml'>;

interface LayoutShell {
  beforeTitle: string;
  betweenTitleAndContent: string;
  afterContent: string;
  /** null: the text part of each email of the look is converted from its whole markup. */
  text: ShellText | null;
}

const MARKER = randomBytes(16).toString('hex');
const TITLE_MARKER = `herald-title-${MARKER}`;
const CONTENT_MARKER = `herald-content-${MARKER}`;
/** Stands in for the layout's text around an email's content (textBetween). */
const STAND_IN = `herald${MARKER}`;
/** Distinct looks kept; beyond it the oldest is dropped (a look is one brand's values and a language). */
const MAX_SHELLS = 200;
const shells = new Map<string, Promise<LayoutShell | null>>();

function layoutShell(look: LayoutLook): Promise<LayoutShell | null> {
  // Every look is built by renderEmail, its fields always in the same order.
  const key = JSON.stringify(look);
  let shell = shells.get(key);
  if (!shell) {
    // A look whose shell failed to render is tried again by its next email (which renders in full meanwhile).
    shell = renderShell(look).catch(() => {
      shells.delete(key);
      return null;
    });
    shells.set(key, shell);
    if (shells.size > MAX_SHELLS) shells.delete(shells.keys().next().value!);
  }
  return shell;
}

/** null when the markers do not come out once each, title first: then every email of the look takes the full render. */
async function renderShell(look: LayoutLook): Promise<LayoutShell | null> {
  const { render, BrandLayout } = await loadEmailRenderer();
  const html = await render(BrandLayout({ ...look, title: TITLE_MARKER, contentHtml: CONTENT_MARKER }));
  const [beforeTitle, rest, ...moreTitles] = html.split(TITLE_MARKER);
  if (rest === undefined || moreTitles.length > 0) return null;
  const [betweenTitleAndContent, afterContent, ...moreContents] = rest.split(CONTENT_MARKER);
  if (afterContent === undefined || moreContents.length > 0 || beforeTitle!.includes(CONTENT_MARKER)) return null;
  return {
    beforeTitle: beforeTitle!,
    betweenTitleAndContent: betweenTitleAndContent!,
    afterContent,
    text: await shellText(html),
  };
}

function fitsShell(text: string): boolean {
  return !text.includes('\0') && !/<link\b/i.test(text);
}

const TEXT_ESCAPES: Record<string, string> = { '"': '&quot;', '&': '&amp;', "'": '&#x27;', '<': '&lt;', '>': '&gt;' };

/** Text as React writes it into markup. */
function escapeText(text: string): string {
  return text.replace(/["&'<>]/g, (c) => TEXT_ESCAPES[c]!);
}

// The text part of an email of a shell's look without converting the layout's markup, which is most
// of the work and gives the same text for every email of the look. The content is converted in a
// <div> between two stand-in blocks whose line breaks are those the layout's text has around the
// content marker. html-to-text separates two blocks by the larger of the line breaks the first ends
// with and the second starts with, each the largest of its own and its outermost children's, so the
// content's own line breaks meet the layout's as they would in the whole. The stand-ins' text is then
// swapped for the layout's. The content must parse the same there as in the layout (isSelfContained).

const TEXT_BEFORE = 'herald-text-before';
const TEXT_AFTER = 'herald-text-after';

/** A look's text part around the content: the text, and the line breaks between it and the content. */
interface ShellText {
  before: string;
  linesBefore: number;
  after: string;
  linesAfter: number;
}

/** The text of a shell's markup (content marker in place), split at the marker; null when it does not come out once. */
async function shellText(html: string): Promise<ShellText | null> {
  const { toText } = await loadEmailRenderer();
  const text = toText(html);
  const [before, after, ...more] = text.split(CONTENT_MARKER);
  if (after === undefined || more.length > 0 || text.includes(TITLE_MARKER)) return null;
  const linesBefore = before!.length - before!.trimEnd().length;
  const linesAfter = after.length - after.trimStart().length;
  const shell = {
    before: before!.slice(0, before!.length - linesBefore),
    linesBefore,
    after: after.slice(linesAfter),
    linesAfter,
  };
  // Only line breaks between the content and the layout's text, and some where there is text.
  const breaks = /^\n*$/;
  if (!breaks.test(before!.slice(shell.before.length)) || !breaks.test(after.slice(0, linesAfter))) return null;
  if ((shell.before && !linesBefore) || (shell.after && !linesAfter)) return null;
  return shell;
}

/** The text part of the email whose content is contentHtml, from the look's text around the content's; null if the stand-ins do not come out first and last. */
async function textBetween(shell: ShellText, contentHtml: string): Promise<string | null> {
  const convert = (await loadEmailRenderer()).toTextBetween(shell.linesBefore, shell.linesAfter);
  const before = shell.before ? `<${TEXT_BEFORE}>${STAND_IN}</${TEXT_BEFORE}>` : '';
  const after = shell.after ? `<${TEXT_AFTER}>${STAND_IN}</${TEXT_AFTER}>` : '';
  let text = convert(`${before}<div>${contentHtml}</div>${after}`);
  if (before) {
    if (!text.startsWith(STAND_IN)) return null;
    text = shell.before + text.slice(STAND_IN.length);
  }
  if (after) {
    if (!text.endsWith(STAND_IN)) return null;
    text = text.slice(0, -STAND_IN.length) + shell.after;
  }
  return text.trim();
}

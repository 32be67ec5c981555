// The render stage: which template fills a delivery, and the context it renders with. The template
// is found from what the load stage read (the event's brand, or the tenant's default when none was
// named or it has been deleted since; the contact's language; the fallback chain of resolve.ts), once
// per distinct (kind, tenant, type, candidates) of a run: a batch is mostly one type for one brand.
import type { EntityManager } from '@mikro-orm/postgresql';
import { KeyUnavailableError } from '../base/crypto/keyring.ts';
import type { Context } from '../base/context.ts';
import type { ContactRow } from '../base/db/contacts.ts';
import { MUTABLE_CONTACT_FIELDS } from '../schemas/contacts.ts';
import { secretVariablesAad } from '../base/crypto/aad.ts';
import type { JsonValue } from '../schemas/common.ts';
import {
  findTemplate,
  renderContext,
  templateCandidates,
  type BrandRow,
  type ChatBlocks,
  type EmailTemplateRow,
  type TemplateKind,
  type TemplateRows,
} from './resolve.ts';
import {
  renderChat,
  renderEmail,
  renderHttp,
  renderInbox,
  renderSms,
  type RenderedEmail,
  type RenderedInbox,
} from './render.ts';
import { referencedVariables, renderString } from '../base/template-engine.ts';
import type { EventForDelivery } from './types.ts';

/** Templates found during one run, by what was asked. */
export type TemplateCache = Map<string, Promise<TemplateRows[TemplateKind] | null>>;

export function newTemplateCache(): TemplateCache {
  return new Map();
}

export interface ResolvedTemplate<T> {
  template: T;
  brand: BrandRow;
}

async function deliveryTemplate<K extends TemplateKind>(
  em: EntityManager,
  kind: K,
  event: EventForDelivery,
  contact: Pick<ContactRow, 'language'>,
  cache: TemplateCache,
): Promise<ResolvedTemplate<TemplateRows[K]> | null> {
  const brand = event.brand;
  if (!brand) return null;
  // Keyed by what the candidates are made of (ids, keys and language tags never hold a newline, nor
  // are they empty): a run asks once per delivery, and the candidate lists are built on a miss only.
  const key = `${kind}\n${event.tenant_id}\n${event.type_key}\n${brand.key}\n${event.default_brand_key ?? ''}\n${contact.language ?? ''}\n${event.default_language}`;
  let found = cache.get(key);
  if (!found) {
    const candidates = templateCandidates(brand.key, event.default_brand_key, contact.language, event.default_language);
    found = findTemplate(em, kind, { tenantId: event.tenant_id, typeKey: event.type_key, ...candidates });
    cache.set(key, found);
  }
  const template = await found;
  return template ? { template: template as never, brand } : null;
}

/** The render context of a delivery: brand values, then the variables (secret ones included), plus the contact. */
function deliveryContext(
  brand: BrandRow,
  variables: Record<string, unknown>,
  contact: ContactRow,
): Record<string, unknown> {
  return renderContext(brand, variables, contactContext(contact));
}

/** What templates and workflow conditions see of the contact: its id, external id, fields and time zone. */
export function contactContext(contact: ContactRow): Record<string, unknown> {
  const context: Record<string, unknown> = {
    id: contact.id,
    external_id: contact.external_id,
    timezone: contact.timezone,
  };
  for (const field of MUTABLE_CONTACT_FIELDS) context[field] = contact[field];
  return context;
}

/**
 * The inbox template rendered for a delivery (inbox items, and the text of push messages); null: no
 * template. Within a run (one `cache`), each of its strings is rendered once per distinct values of
 * what it reads: the recipients of a trigger or a broadcast mostly get the same title, unless it
 * names them.
 */
export async function renderInboxDelivery(
  em: EntityManager,
  event: EventForDelivery,
  contact: ContactRow,
  variables: Record<string, unknown>,
  cache: TemplateCache,
): Promise<RenderedInbox | null> {
  const resolved = await deliveryTemplate(em, 'inbox', event, contact, cache);
  if (!resolved) return null;
  const context = deliveryContext(resolved.brand, variables, contact);
  // Throws UnfilledSlotError or TemplateError: a final failure naming the slot (the run records it).
  return renderInbox(resolved.template, context, runTextRenderer(cache, context));
}

/** Renders a template string with the context, once per distinct values of what it reads within the run. */
function runTextRenderer(cache: TemplateCache, context: Record<string, unknown>): (source: string) => string {
  let rendered = renderedByRun.get(cache);
  if (!rendered) renderedByRun.set(cache, (rendered = new Map()));
  const renderings = rendered;
  return (source) => renderTextOnce(renderings, source, context);
}

/** A run's renderings: by source, then by the values of the names the source reads. */
type Renderings = Map<string, { reads: readonly string[] | null; texts: Map<string, string> }>;

const renderedByRun = new WeakMap<TemplateCache, Renderings>();

function renderTextOnce(rendered: Renderings, source: string, context: Record<string, unknown>): string {
  let entry = rendered.get(source);
  if (!entry) rendered.set(source, (entry = { reads: textReads(source), texts: new Map() }));
  if (!entry.reads) return renderString(source, context, 'text');
  const key = readValuesKey(entry.reads, context);
  let text = entry.texts.get(key);
  if (text === undefined) {
    text = renderString(source, context, 'text');
    entry.texts.set(key, text);
  }
  return text;
}

/**
 * The email template rendered for a delivery, with the brand it was rendered for; null: no template.
 * Within a run (one `cache`), an email is rendered once per template, brand and distinct values of
 * what its subject and content read (its layout and text part with it): a broadcast's recipients
 * mostly get the same email, unless it names them or carries their own links.
 */
export async function renderEmailDelivery(
  em: EntityManager,
  event: EventForDelivery,
  contact: ContactRow,
  variables: Record<string, unknown>,
  cache: TemplateCache,
): Promise<{ email: RenderedEmail; brand: BrandRow } | null> {
  const resolved = await deliveryTemplate(em, 'email', event, contact, cache);
  if (!resolved) return null;
  const { template, brand } = resolved;
  const context = deliveryContext(brand, variables, contact);
  let rendered = emailsByRun.get(cache);
  if (!rendered) emailsByRun.set(cache, (rendered = new Map()));
  // One load gives a run its templates and brands: their ids name them for the run.
  const id = `${template.id}\n${brand.id}`;
  let entry = rendered.get(id);
  if (!entry) rendered.set(id, (entry = { reads: emailReads(template), emails: new Map() }));
  // Throws UnfilledSlotError or TemplateError: a final failure naming the slot (the run records it).
  if (!entry.reads) return { email: await renderEmail(template, brand, context), brand };
  const key = readValuesKey(entry.reads, context);
  let email = entry.emails.get(key);
  if (!email) {
    email = renderEmail(template, brand, context);
    entry.emails.set(key, email);
  }
  return { email: await email, brand };
}

/** A run's emails: by template and brand, then by the values of the names the subject and content read. */
const emailsByRun = new WeakMap<
  TemplateCache,
  Map<string, { reads: readonly string[] | null; emails: Map<string, Promise<RenderedEmail>> }>
>();

function emailReads(template: EmailTemplateRow): string[] | null {
  const [subject, content] = [textReads(template.subject), textReads(template.content)];
  return subject && content ? [...new Set([...subject, ...content])] : null;
}

/**
 * The values of the names a template reads, as a key. A name the context lacks ([]) is told apart
 * from one it holds as null ([null]): only the first leaves a slot unfilled. Own properties only, as
 * the engine reads them ("constructor" is no variable).
 */
function readValuesKey(reads: readonly string[], context: Record<string, unknown>): string {
  return JSON.stringify(reads.map((name) => (Object.hasOwn(context, name) ? [context[name]] : [])));
}

/** textReads' answers by source, up to a bound (templates are edited rarely, and a clear costs one parse each). */
const readsBySource = new Map<string, readonly string[] | null>();
const MAX_REMEMBERED_SOURCES = 1000;

/**
 * The top-level names a template string reads from its context; null when it may read others too:
 * a bracket lookup (`{{ [name] }}`, `{{ items[i] }}`) can name what it reads with a value, and a
 * template whose reads cannot be told (none found, yet it has tags or outputs) is taken as reading anything.
 * Remembered by source across runs: the answer depends on the text alone, finding it parses the
 * template, and a remote run's batch may hold only a few deliveries to spread that over.
 */
function textReads(source: string): readonly string[] | null {
  let reads = readsBySource.get(source);
  if (reads === undefined) {
    reads = source.includes('[') ? null : referencedVariables(source);
    if (reads?.length === 0 && /\{[{%]/.test(source)) reads = null;
    if (readsBySource.size >= MAX_REMEMBERED_SOURCES) readsBySource.clear();
    readsBySource.set(source, reads);
  }
  return reads;
}

/** The variables to render with: the public ones plus the decrypted secret ones (never logged, never stored). */
export function readVariables(
  runtime: Context,
  event: { id: string; variables: Record<string, unknown>; secret_variables_ciphertext: string | null },
): { values: Record<string, unknown> } | { error: string } {
  if (!event.secret_variables_ciphertext) return { values: event.variables };
  try {
    const secrets = JSON.parse(
      runtime.keyRing.decrypt(event.secret_variables_ciphertext, secretVariablesAad(event.id)),
    ) as Record<string, unknown>;
    return { values: { ...event.variables, ...secrets } };
  } catch (error) {
    return {
      error:
        error instanceof KeyUnavailableError
          ? 'secret variables are unreadable: their encryption key is no longer in the key ring'
          : 'secret variables could not be decrypted',
    };
  }
}

/**
 * What the text channels (sms, chat, http) send: a title, a body and where it leads (from the inbox
 * template when the channel's kind has no template of its own), and what the channel's own template
 * gave.
 */
export interface RenderedMessage {
  title: string;
  body: string;
  action_url: string | null;
  /** An SMS template's rendered content: the whole text of the SMS (smsText). */
  text?: string;
}

export interface RenderedChatMessage extends RenderedMessage {
  /** The chat template's content rendered (Markdown); null: no chat template, the title and body are plain text. */
  markdown: string | null;
  /** The chat template's provider blocks rendered; null when it has none (or there is no chat template). */
  blocks: ChatBlocks | null;
}

export interface RenderedHttpMessage extends RenderedMessage {
  /** The http template's body rendered (a JSON value); null: no http template, the channel sends its default body. */
  http_body: JsonValue | null;
}

/** The template kinds of the text channels, one per channel. */
export type MessageKind = 'sms' | 'chat' | 'http';

interface RenderedMessages {
  sms: RenderedMessage;
  chat: RenderedChatMessage;
  http: RenderedHttpMessage;
}

export type RenderedMessageOf<K extends MessageKind> = RenderedMessages[K];

/**
 * The message of an sms, chat or http delivery; null: no template. The channel's own template kind
 * is looked up first (the fallback chain of resolve.ts, once per run as the others); without one, it
 * is the inbox template's title and body, so one template serves a type on every channel.
 */
export async function renderMessageDelivery<K extends MessageKind>(
  em: EntityManager,
  kind: K,
  event: EventForDelivery,
  contact: ContactRow,
  variables: Record<string, unknown>,
  cache: TemplateCache,
): Promise<RenderedMessageOf<K> | null> {
  const own = await deliveryTemplate(em, kind, event, contact, cache);
  if (own) {
    const context = deliveryContext(own.brand, variables, contact);
    // Throws UnfilledSlotError or TemplateError: a final failure naming the slot (the run records it).
    return messageFromTemplate(kind, own.template, context, runTextRenderer(cache, context));
  }
  const inbox = await renderInboxDelivery(em, event, contact, variables, cache);
  return inbox ? messageFromInbox(kind, inbox) : null;
}

/** A message from the channel's own template, rendered with the context. Throws as renderInbox does. */
export function messageFromTemplate<K extends MessageKind>(
  kind: K,
  template: TemplateRows[K],
  context: Record<string, unknown>,
  renderText: (source: string) => string = (source) => renderString(source, context, 'text'),
): RenderedMessageOf<K> {
  const none = { title: '', action_url: null };
  const rows = template as TemplateRows[MessageKind];
  switch (kind) {
    case 'sms': {
      const { text } = renderSms(rows as TemplateRows['sms'], context, renderText);
      return { ...none, body: text, text } as RenderedMessageOf<K>;
    }
    case 'chat': {
      const { markdown, blocks } = renderChat(rows as TemplateRows['chat'], context, renderText);
      return { ...none, body: markdown, markdown, blocks } as RenderedMessageOf<K>;
    }
    default: {
      const { body } = renderHttp(rows as TemplateRows['http'], context, renderText);
      return { ...none, body: '', http_body: body } as RenderedMessageOf<K>;
    }
  }
}

/** A message from the inbox template's rendering, for a channel whose kind has no template of its own. */
export function messageFromInbox<K extends MessageKind>(kind: K, inbox: RenderedInbox): RenderedMessageOf<K> {
  const message: RenderedMessage = { title: inbox.title, body: inbox.body, action_url: inbox.action_url };
  if (kind === 'chat') return { ...message, markdown: null, blocks: null } as RenderedMessageOf<K>;
  if (kind === 'http') return { ...message, http_body: null } as RenderedMessageOf<K>;
  return message as RenderedMessageOf<K>;
}

/** An SMS's one text: the sms template's text, else the title and the body on lines of their own (either may be empty). */
export function smsText(message: RenderedMessage): string {
  if (message.text !== undefined) return message.text;
  return [message.title, message.body].filter((part) => part.trim().length > 0).join('\n');
}

/** A chat message's text: the chat template's Markdown, else the title and the body on lines of their own. */
export function chatText(message: RenderedChatMessage): string {
  if (message.markdown !== null) return message.markdown;
  return smsText(message);
}

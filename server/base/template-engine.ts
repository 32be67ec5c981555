// The template engine: LiquidJS, sandboxed (data only, own properties only, no file access, time and
// size limits) and strict (an unknown variable or filter is an error, never an empty string; only the
// test of an `if`/`unless` and the `default` filter may meet a missing value, so that a template can
// say what to show instead: `{{ contact.name | default: "there" }}`). Two
// engines: one that HTML-escapes every output (email HTML), one for plain text (subjects, inbox titles
// and bodies, push payloads: escaping there would show "&amp;" to people).
import { Liquid, Tokenizer, type Template } from 'liquidjs';

const common = {
  strictVariables: true,
  lenientIf: true,
  strictFilters: true,
  ownPropertyOnly: true,
  cache: 500,
  parseLimit: 100_000,
  renderLimit: 1_000,
  memoryLimit: 10_000_000,
  templates: {},
} as const;

const htmlEngine = new Liquid({ ...common, outputEscape: 'escape' });
const textEngine = new Liquid({ ...common });

// Tags that pull in another template by name read it from the file system (the working directory by
// default: a tenant's template could have rendered Herald's own files, its key file included). Herald
// templates are self-contained: these tags are refused when a template is parsed (a 422 when it is
// saved or previewed), and the engines' template lookup is an empty map should one get through.
const FILE_TAGS = ['include', 'render', 'layout'];
for (const engine of [htmlEngine, textEngine]) {
  for (const name of FILE_TAGS) {
    engine.registerTag(name, {
      parse() {
        throw new Error(`the "${name}" tag is not available: Herald templates are self-contained`);
      },
      render() {
        return '';
      },
    });
  }
}

/**
 * A template placeholder that nothing fills: a variable that neither the event nor the brand values
 * give (slot: the variable's name), or a field the contact does not have (slot: "contact.name").
 */
export class UnfilledSlotError extends Error {
  override name = 'UnfilledSlotError';
  readonly slot: string;
  constructor(slot: string) {
    super(
      slot.startsWith(CONTACT_SLOT)
        ? `template slot "${slot}" is not filled: the contact has no ${slot.slice(CONTACT_SLOT.length)}`
        : `template slot "${slot}" is not filled by the variables or the brand values`,
    );
    this.slot = slot;
  }
}

const CONTACT_SLOT = 'contact.';

/** The slot an undefined path leaves unfilled: a contact field by its path, a variable by its name. */
function slotOf(path: string): string {
  return path.startsWith(CONTACT_SLOT) ? path : path.split(/[.[]/)[0]!;
}

/** A template that does not parse or fails for another reason than a missing value. */
export class TemplateError extends Error {
  override name = 'TemplateError';
}

export type RenderMode = 'html' | 'text';

/**
 * A template of literal text and `{{ name.path }}` outputs only, as most are ("Order {{ order }}
 * shipped"). It renders as the literals with each value between them, without liquidjs's context and
 * generators, as long as every value it reads is a string or a number, which liquidjs outputs as
 * they are (HTML-escaped by the html engine). Any other value, and any missing one, renders through
 * liquidjs, whose output and errors are the rule.
 */
interface PlainTemplate {
  /** One more than paths: the text before each output and after the last. */
  literals: string[];
  paths: string[][];
}

const PLAIN_OUTPUT = /\{\{\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\}\}/g;
/**
 * Names liquidjs reads its own way, whatever the context holds: its literals as the first name, and
 * the size, first and last shorthands as any.
 */
const LITERALS = new Set(['true', 'false', 'nil', 'null', 'empty', 'blank']);
const SPECIAL_KEYS = new Set(['size', 'first', 'last']);
/** Values longer than this render through liquidjs, which counts them against its memory limit. */
const PLAIN_VALUE_LIMIT = 100_000;

function plainTemplate(source: string): PlainTemplate | null {
  const literals: string[] = [];
  const paths: string[][] = [];
  let last = 0;
  for (const match of source.matchAll(PLAIN_OUTPUT)) {
    const path = match[1]!.split('.');
    if (LITERALS.has(path[0]!) || path.some((key) => SPECIAL_KEYS.has(key))) return null;
    literals.push(source.slice(last, match.index));
    paths.push(path);
    last = match.index + match[0].length;
  }
  literals.push(source.slice(last));
  return literals.some((text) => text.includes('{{') || text.includes('{%')) ? null : { literals, paths };
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

/** The plain template rendered, or null when a value it reads is not a string or a number (liquidjs renders it then). */
function renderPlain(template: PlainTemplate, context: Record<string, unknown>, mode: RenderMode): string | null {
  let out = template.literals[0]!;
  for (let i = 0; i < template.paths.length; i++) {
    let value: unknown = context;
    for (const key of template.paths[i]!) {
      if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key))
        return null;
      value = (value as Record<string, unknown>)[key];
    }
    let text: string;
    if (typeof value === 'string') text = value;
    else if (typeof value === 'number') text = String(value);
    else return null;
    if (text.length > PLAIN_VALUE_LIMIT) return null;
    out += (mode === 'html' ? escapeHtml(text) : text) + template.literals[i + 1]!;
  }
  return out;
}

interface ParsedTemplate {
  templates: Template[];
  plain: PlainTemplate | null;
}

/** Parsed templates by source, per engine: liquidjs caches parsed files, never strings (parseAndRender parses every time). */
const PARSED_CACHE_SIZE = 500;
const parsed = new Map<Liquid, Map<string, ParsedTemplate>>();

function parse(engine: Liquid, source: string): ParsedTemplate {
  let cache = parsed.get(engine);
  if (!cache) parsed.set(engine, (cache = new Map()));
  let template = cache.get(source);
  if (template) return template;
  // Parsed by liquidjs all the same: a source that is not a template fails as liquidjs says.
  template = { templates: engine.parse(source), plain: plainTemplate(source) };
  // Oldest first out (a Map iterates in insertion order); the cap bounds memory, whatever the sources.
  if (cache.size >= PARSED_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  cache.set(source, template);
  return template;
}

/**
 * Renders synchronously: no filter or tag of ours is asynchronous, and liquidjs's async render drives
 * the same generators through a promise per step (a few percent of a delivery worker's CPU).
 */
export function renderString(source: string, context: Record<string, unknown>, mode: RenderMode): string {
  return renderParsed(source, context, mode, true);
}

/** renderString through liquidjs always (exported for the tests, which check the plain form against it). */
export function renderStringWithLiquid(source: string, context: Record<string, unknown>, mode: RenderMode): string {
  return renderParsed(source, context, mode, false);
}

function renderParsed(source: string, context: Record<string, unknown>, mode: RenderMode, plainFirst: boolean): string {
  const engine = mode === 'html' ? htmlEngine : textEngine;
  try {
    const template = parse(engine, source);
    const plain = plainFirst && template.plain ? renderPlain(template.plain, context, mode) : null;
    return plain ?? (engine.renderSync(template.templates, context) as string);
  } catch (error) {
    const message = (error as Error).message ?? '';
    const undefinedVariable = /undefined variable: ([\w.[\]"']+)/.exec(message);
    if (undefinedVariable) throw new UnfilledSlotError(slotOf(undefinedVariable[1]!));
    throw new TemplateError(message.split('\n')[0] ?? 'template error', { cause: error });
  }
}

/** Checks that a template parses; returns the parse error message, or null. */
export function templateSyntaxError(source: string): string | null {
  try {
    textEngine.parse(source);
    return null;
  } catch (error) {
    return ((error as Error).message ?? 'invalid template').split('\n')[0]!;
  }
}

/** Top-level variable names a template refers to ({{ order.id }} -> "order"). */
export function referencedVariables(source: string): string[] {
  try {
    return [...new Set(textEngine.globalVariablesSync(source).map((v) => String(v).split(/[.[]/)[0]!))];
  } catch {
    return [];
  }
}

// Workflow conditions: a Liquid expression, evaluated as the test of an `if` tag. Not strict: a
// condition on a variable an event does not carry is false, not an error.
const conditionEngine = new Liquid({ ...common, strictVariables: false });
const CONDITION_DELIMITERS = /\{%|%\}|\{\{|\}\}/;

function conditionTemplate(expression: string): Template[] {
  if (CONDITION_DELIMITERS.test(expression)) throw new Error('a condition is an expression, without {% %} or {{ }}');
  const { templates } = parse(conditionEngine, `{% if ${expression} %}1{% endif %}`);
  checkOperands(expression);
  return templates;
}

/**
 * liquidjs parses leniently ("a ==" and "a b" parse, and evaluate to something): the expression's
 * postfix form must reduce to exactly one value, every operator finding its operands.
 */
function checkOperands(expression: string): void {
  const tokenizer = new Tokenizer(expression);
  const postfix = [
    ...(tokenizer.readExpression() as unknown as { postfix: Array<{ operator?: string; getText(): string }> }).postfix,
  ];
  let depth = 0;
  for (const token of postfix) {
    if (token.operator === undefined) depth++;
    else if (token.operator !== 'not') {
      if (depth < 2) throw new Error(`"${token.getText()}" needs a value on each side`);
      depth--;
    } else if (depth < 1) throw new Error('"not" needs a value');
  }
  if (depth !== 1) throw new Error('the condition must be one expression (join tests with "and" or "or")');
}

/** Checks that a condition parses; returns the parse error message, or null. */
export function conditionSyntaxError(expression: string): string | null {
  try {
    conditionTemplate(expression);
    return null;
  } catch (error) {
    return ((error as Error).message ?? 'invalid condition').split('\n')[0]!;
  }
}

/** Evaluates a condition against a context; throws TemplateError when it cannot be evaluated. */
export function evaluateCondition(expression: string, context: Record<string, unknown>): boolean {
  try {
    return conditionEngine.renderSync(conditionTemplate(expression), context) === '1';
  } catch (error) {
    throw new TemplateError(((error as Error).message ?? 'condition error').split('\n')[0]!, { cause: error });
  }
}

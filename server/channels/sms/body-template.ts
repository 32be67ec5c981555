// The http gateway's body template: a JSON value whose strings may name {{ to }} and {{ text }}.
// Rendering replaces them inside the parsed strings and serialises the result, so a text with quotes
// or newlines is JSON-escaped and can never change the body's shape.

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}/g;

/** Every placeholder name the template's strings use. */
export function templatePlaceholders(template: unknown): string[] {
  const names = new Set<string>();
  const walk = (value: unknown) => {
    if (typeof value === 'string') for (const m of value.matchAll(PLACEHOLDER)) names.add(m[1]!);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(template);
  return [...names];
}

/** The template with its placeholders filled, as JSON text. */
export function renderBodyTemplate(template: unknown, values: Record<string, string>): string {
  const fill = (value: unknown): unknown => {
    if (typeof value === 'string') return value.replace(PLACEHOLDER, (whole, name: string) => values[name] ?? whole);
    if (Array.isArray(value)) return value.map(fill);
    if (value && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]));
    return value;
  };
  return JSON.stringify(fill(template));
}

// A depth limit for JSON taken from outside. Free-form fields (properties, variables, data) are
// stored and serialised again, and a value nested thousands deep overflows the stack of
// JSON.stringify: such a request must be refused with its location, not answered 500.

/** Containers (objects, arrays) nested deeper than this are refused; real payloads stay far below it. */
export const MAX_JSON_DEPTH = 32;

/**
 * The path to the first container nested deeper than MAX_JSON_DEPTH, or null. The text is scanned
 * first (brackets outside strings), so a usual body costs one pass over its characters and no walk.
 */
export function tooDeepPath(text: string, value: unknown): Array<string | number> | null {
  if (!textNestsDeeperThan(text, MAX_JSON_DEPTH)) return null;
  return pathDeeperThan(value, MAX_JSON_DEPTH);
}

function textNestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return false;
}

/** Walks without recursion: the value may be nested deeper than the stack allows. */
function pathDeeperThan(root: unknown, limit: number): Array<string | number> | null {
  const stack: Array<{ value: unknown; path: Array<string | number> }> = [{ value: root, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (path.length >= limit) return path;
    const entries: Array<[string | number, unknown]> = Array.isArray(value)
      ? value.map((item, index) => [index, item])
      : Object.entries(value);
    for (const [key, child] of entries) stack.push({ value: child, path: [...path, key] });
  }
  return null;
}

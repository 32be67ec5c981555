// Input validation: zod issues become HTTPValidationError entries with FastAPI-style locations
// (["body", "email"], ["query", "limit"], ["path", "key"]). Shared by the HTTP layer, the services
// that validate beyond a route's schema, and the CLI's local commands.
import type { z } from 'zod';
import { ValidationFailure, type ValidationIssue } from './errors.ts';

export type InputPart = 'body' | 'query' | 'path' | 'header';

export function issuesOf(part: InputPart, error: z.ZodError): ValidationIssue[] {
  return error.issues.map((issue) => ({
    loc: [part, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
    msg: issue.message,
    type: issue.code,
  }));
}

export function parseInput<S extends z.ZodType>(part: InputPart, schema: S, value: unknown): z.infer<S> {
  const unstorable = findUnstorableText(value);
  if (unstorable)
    throw new ValidationFailure([{ loc: [part, ...unstorable.path], msg: unstorable.msg, type: 'value_error' }]);
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationFailure(issuesOf(part, result.error));
  return result.data;
}

/** Why PostgreSQL could not store a string (text or jsonb), or null when it can. */
function unstorable(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  // JSON may escape half of a surrogate pair alone ("\ud800"): valid JSON text, but not Unicode.
  if (!text.isWellFormed()) return 'must be well-formed Unicode (an unpaired surrogate is not)';
  return null;
}

/**
 * The first string (or object key) in the input that PostgreSQL could not store, with where it is
 * (a key ends the path), or null. Such input would fail at the database however a route used it, so
 * it is refused up front, for every route. Walks with a stack of its own (a deeply nested body cannot
 * overflow the call stack), each entry linked to its parent, so that the walk stays linear in the size
 * of the input however deep it nests.
 */
function findUnstorableText(value: unknown): { path: Array<string | number>; msg: string } | null {
  interface Step {
    value: unknown;
    key: string | number | null;
    parent: Step | null;
  }
  const pathOf = (step: Step, last: Array<string | number> = []) => {
    const reversed: Array<string | number> = [];
    for (let s: Step | null = step; s && s.key !== null; s = s.parent) reversed.push(s.key);
    return [...reversed.reverse(), ...last];
  };
  const pending: Step[] = [{ value, key: null, parent: null }];
  for (let step = pending.pop(); step; step = pending.pop()) {
    const v = step.value;
    if (typeof v === 'string') {
      const msg = unstorable(v);
      if (msg) return { path: pathOf(step), msg };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) pending.push({ value: v[i], key: i, parent: step });
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i]!;
        const msg = unstorable(key);
        if (msg) return { path: pathOf(step, [key]), msg };
        pending.push({ value: item, key, parent: step });
      }
    }
  }
  return null;
}

// Request validation: zod issues become HTTPValidationError entries with FastAPI-style locations
// (["body", "email"], ["query", "limit"], ["path", "key"]).
import type { z } from 'zod';
import { ValidationFailure, type ValidationIssue } from '../errors.ts';

export type InputPart = 'body' | 'query' | 'path' | 'header';

export function issuesOf(part: InputPart, error: z.ZodError): ValidationIssue[] {
  return error.issues.map((issue) => ({
    loc: [part, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
    msg: issue.message,
    type: issue.code,
  }));
}

export function parseInput<S extends z.ZodType>(part: InputPart, schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationFailure(issuesOf(part, result.error));
  return result.data;
}

// A YAML document read from a file or stdin and checked against a zod schema. Every problem is
// reported with its path in the document and, where the YAML has it, its line:
//   herald.yaml: brands[1].values.colour (line 14): must be a hex colour like #1a2b3c
import { LineCounter, parseDocument, isNode, type Document } from 'yaml';
import type { z } from 'zod';
import { readText } from './file-input.ts';
import { usageError } from './output.ts';

/** "brands[1].values.colour" */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  return (
    path.reduce<string>(
      (out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)),
      '',
    ) || '(document)'
  );
}

/** The line of the deepest node of `path` that the document has. */
function lineOf(document: Document, counter: LineCounter, path: ReadonlyArray<PropertyKey>): number | null {
  for (let depth = path.length; depth >= 0; depth--) {
    const node = depth === 0 ? document.contents : document.getIn(path.slice(0, depth) as unknown[], true);
    if (isNode(node) && node.range) return counter.linePos(node.range[0]).line;
  }
  return null;
}

export function readYamlDocument<S extends z.ZodType>(source: string, schema: S): z.infer<S> {
  const name = source === '-' ? '(stdin)' : source;
  const counter = new LineCounter();
  const document = parseDocument(readText(source, '-f'), { lineCounter: counter, prettyErrors: false });
  if (document.errors.length > 0) {
    const first = document.errors[0]!;
    const line = first.linePos?.[0]?.line;
    throw usageError(`${name}${line ? ` (line ${line})` : ''}: not valid YAML: ${first.message.split('\n')[0]}`);
  }
  const parsed = schema.safeParse(document.toJS() ?? {});
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const line = lineOf(document, counter, issue.path);
    return `${name}: ${formatPath(issue.path)}${line ? ` (line ${line})` : ''}: ${issue.message}`;
  });
  throw usageError(problems.join('\n'));
}

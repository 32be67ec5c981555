// Input the CLI reads from a file, or from stdin with "-": secrets (passwords, keys, tokens) and JSON
// documents that may hold them. Flags put their values in the process list, where other users of the
// host can read them; a file or a pipe does not. Errors name the flag and the file, never the content
// (JSON.parse, for one, quotes the text it fails on).
import { readFileSync } from 'node:fs';
import { CliError, usageError } from './output.ts';

/** Stdin can be read once per run: the second "-" of a command line has nothing left to read. */
let stdinTakenBy: string | null = null;

/** The text of `source` (a path, or "-" for stdin) as it is. */
function readInput(source: string, what: string): string {
  try {
    if (source !== '-') return readFileSync(source, 'utf8');
    if (stdinTakenBy) throw usageError(`${what} and ${stdinTakenBy} cannot both come from stdin`);
    stdinTakenBy = what;
    return readFileSync(0, 'utf8');
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw usageError(
      `cannot read ${what} from ${source === '-' ? 'stdin' : source}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
}

/** A text document from a file or stdin, as it is. */
export function readText(source: string, what: string): string {
  return readInput(source, what);
}

/** A secret from a file or stdin, surrounding whitespace (a trailing newline) trimmed; empty is an error. */
export function readSecret(source: string, what: string): string {
  const value = readInput(source, what).trim();
  if (!value) throw usageError(`${what} is empty`);
  return value;
}

/** A JSON object from a file or stdin. */
export function readJsonObject(source: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readInput(source, what));
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw usageError(`${what} ${source === '-' ? '(stdin)' : source} is not valid JSON`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw usageError(`${what} ${source === '-' ? '(stdin)' : source} must hold a JSON object`);
  return parsed as Record<string, unknown>;
}

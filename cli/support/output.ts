// CLI conventions: exit 0 ok, 1 failure, 2 usage error, 141 output cut; --json for scripts; human text otherwise.
// Errors print one line to stderr (never a stack trace, never a secret), with --json as a JSON object.
// The exit code of an error has one rule, in describeFailure: 2 for a usage error the CLI finds before
// asking Herald (a bad flag or argument, an unreadable file), 1 for whatever Herald answers with an
// error, whatever its status (a 422 included) and whichever mode asked it.
import { AppError, ValidationFailure } from '../../server/base/errors.ts';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** The output was cut: its reader closed the pipe (128 + SIGPIPE, as a shell reports a tool SIGPIPE ended). */
export const EXIT_OUTPUT_CLOSED = 141;

/** What Herald answered to a request it refused: the HTTP status (the services' own, locally), and its body. */
export interface HeraldAnswer {
  status: number;
  /** The ErrorResponse code. */
  code?: string;
  /** The body's detail: its message, or the HTTPValidationError entries ({loc, msg, type}). */
  detail?: unknown;
}

/** An error with a chosen exit code and a message meant for the person at the terminal. */
export class CliError extends Error {
  override name = 'CliError';
  readonly exitCode: number;
  /** Herald's answer, when the error is Herald refusing what the command asked. */
  readonly answer: HeraldAnswer | undefined;
  constructor(message: string, exitCode: number = EXIT_FAILURE, answer?: HeraldAnswer) {
    super(message);
    this.exitCode = exitCode;
    this.answer = answer;
  }
}

export function usageError(message: string): CliError {
  return new CliError(message, EXIT_USAGE);
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

export function print(line = ''): void {
  process.stdout.write(line + '\n');
}

/** Prints rows as an aligned table. */
export function printTable(rows: Array<Record<string, unknown>>, columns: string[]): void {
  if (rows.length === 0) {
    print('(none)');
    return;
  }
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : v instanceof Date ? v.toISOString() : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  print(
    columns
      .map((c, i) => c.toUpperCase().padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
  for (const row of rows)
    print(
      columns
        .map((c, i) => cell(row[c]).padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
}

/** Prints one record as a field/value table; nested values as compact JSON. */
export function printRecord(record: Record<string, unknown>): void {
  printTable(
    Object.entries(record).map(([field, value]) => ({
      field,
      value: value !== null && typeof value === 'object' ? JSON.stringify(value) : value,
    })),
    ['field', 'value'],
  );
}

/** An error as the CLI reports it: its exit code, its message, and Herald's answer when Herald gave one. */
export interface Failure {
  exitCode: number;
  message: string;
  answer?: HeraldAnswer;
}

/** Maps any error to its exit code and a one-line message (the one place exit codes of errors are chosen). */
export function describeFailure(error: unknown): Failure {
  if (error instanceof CliError)
    return { exitCode: error.exitCode, message: error.message, ...(error.answer ? { answer: error.answer } : {}) };
  if (error instanceof ValidationFailure)
    return { exitCode: EXIT_FAILURE, message: error.message, answer: { status: 422, detail: error.issues } };
  if (error instanceof AppError)
    return {
      exitCode: EXIT_FAILURE,
      message: error.message,
      answer: { status: error.status, code: error.code, detail: error.message },
    };
  if (error instanceof Error) return { exitCode: EXIT_FAILURE, message: error.message };
  return { exitCode: EXIT_FAILURE, message: String(error) };
}

/** Writes a failure to stderr: `herald: <message>`, or with --json `{"error": {message, exit_code, status?, code?, detail?}}`. */
export function printFailure(failure: Failure, json: boolean): void {
  if (!json) {
    process.stderr.write(`herald: ${failure.message}\n`);
    return;
  }
  const error = { message: failure.message, exit_code: failure.exitCode, ...failure.answer };
  process.stderr.write(JSON.stringify({ error }) + '\n');
}

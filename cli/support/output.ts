// CLI conventions: exit 0 ok, 1 failure, 2 usage error, 141 output cut; --json for scripts; human text otherwise.
// Errors print one line to stderr (never a stack trace, never a secret).
import { AppError, ValidationFailure } from '../../server/base/errors.ts';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** The output was cut: its reader closed the pipe (128 + SIGPIPE, as a shell reports a tool SIGPIPE ended). */
export const EXIT_OUTPUT_CLOSED = 141;

/** An error with a chosen exit code and a message meant for the person at the terminal. */
export class CliError extends Error {
  override name = 'CliError';
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT_FAILURE) {
    super(message);
    this.exitCode = exitCode;
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

/** Maps any error to its exit code and a one-line message. */
export function describeFailure(error: unknown): { code: number; message: string } {
  if (error instanceof CliError) return { code: error.exitCode, message: error.message };
  if (error instanceof ValidationFailure) return { code: EXIT_USAGE, message: error.message };
  if (error instanceof AppError)
    return { code: error.status === 422 ? EXIT_USAGE : EXIT_FAILURE, message: error.message };
  if (error instanceof Error) return { code: EXIT_FAILURE, message: error.message };
  return { code: EXIT_FAILURE, message: String(error) };
}

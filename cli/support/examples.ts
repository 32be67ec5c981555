// The examples every command's --help ends with: `.addHelpText('after', examples(...))`. Each line is a
// command line as typed at a shell, shown after "$ "; test/docs.test.ts checks that every command has
// one that runs it, and that its options are the command's own.

/** The "Examples:" section of a command's help, one command line a line. */
export function examples(...lines: string[]): string {
  return `\n${lines.length === 1 ? 'Example' : 'Examples'}:\n${lines.map((line) => `  $ ${line}`).join('\n')}`;
}

// The CLI reference of docs/cli.md, from the commands themselves: every command group cli/main.ts
// loads, registered on one program, walked into Markdown (a heading per command, a table of its
// options). test/docs.test.ts checks docs/cli.md lists every command; after adding one, regenerate
// the reference section with:  node test/support/cli-reference.ts
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, type Option } from 'commander';

/** A program with every command group of cli/main.ts registered, as `herald --help` sees it. */
export async function loadProgram(): Promise<Command> {
  const main = readFileSync(new URL('../../cli/main.ts', import.meta.url), 'utf8');
  // Each entry of COMMAND_GROUPS: (await import('./<file>.ts')).<register function>
  const groups = [...main.matchAll(/import\('\.\/([a-z-]+)\.ts'\)\)\.(register\w+)/g)].map((m) => ({
    file: m[1]!,
    register: m[2]!,
  }));
  const program = new Command('herald');
  for (const { file, register } of groups) {
    const module = (await import(`../../cli/${file}.ts`)) as Record<string, unknown>;
    const fn = module[register] as ((p: Command) => void) | undefined;
    if (typeof fn !== 'function') throw new Error(`cli/${file}.ts has no ${register}`);
    fn(program);
  }
  if (groups.length < 10) throw new Error('cli/main.ts: no command groups found');
  return program;
}

/** Every command (groups included) with its full name ("herald transports email test"), in help order. */
export function everyCommand(program: Command): Array<{ name: string; command: Command }> {
  const found: Array<{ name: string; command: Command }> = [];
  const walk = (command: Command, prefix: string) => {
    for (const sub of command.commands) {
      found.push({ name: `${prefix} ${sub.name()}`, command: sub });
      walk(sub, `${prefix} ${sub.name()}`);
    }
  };
  walk(program, 'herald');
  return found;
}

/** Every command's full name, groups included, in help order. */
export function commandNames(program: Command): string[] {
  return everyCommand(program).map(({ name }) => name);
}

function optionRow(option: Option): string {
  const fallback = option.defaultValue;
  const shown =
    fallback !== undefined && fallback !== false && !(Array.isArray(fallback) && fallback.length === 0)
      ? ` (default: ${JSON.stringify(fallback)})`
      : '';
  const choices = option.argChoices ? ` (${option.argChoices.join(', ')})` : '';
  return `| \`${option.flags}\` | ${option.description.replace(/\|/g, '\\|')}${shown}${choices} |`;
}

/** The reference section: a heading per command (deeper for sub-commands), its description and options. */
export function referenceMarkdown(program: Command): string {
  const out: string[] = [];
  const walk = (command: Command, prefix: string, depth: number) => {
    for (const sub of command.commands) {
      const name = `${prefix} ${sub.name()}`;
      const args = sub.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`)).join(' ');
      out.push(`${'#'.repeat(depth)} \`${name}${args ? ` ${args}` : ''}\``, '', sub.description(), '');
      const options = sub.options.filter((o) => o.long !== '--help');
      if (sub.commands.length === 0 && options.length > 0)
        out.push('| option | meaning |', '|---|---|', ...options.map(optionRow), '');
      walk(sub, name, depth + 1);
    }
  };
  walk(program, 'herald', 3);
  return out.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.write(referenceMarkdown(await loadProgram()));
}

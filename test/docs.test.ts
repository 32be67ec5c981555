// The documentation the project carries is held to the code: every configuration key of the schema is
// in docs/configuration.md (and nothing else is), every environment variable config.ts reads is named
// there, and every CLI command is in docs/cli.md. A key or a command added without docs fails here.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Command } from 'commander';
import { configSchema } from '../server/base/config.ts';
import { ConfigurationDocument } from '../server/schemas/configuration.ts';
import { commandNames, everyCommand, loadProgram } from './support/cli-reference.ts';
import { DOCUMENTS, READERS_OWN, shellBlocks } from './support/doc-examples.ts';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

/** The schema's keys, nested object keys as parent.child. */
function schemaKeys(shape: Record<string, z.ZodType>, prefix = ''): string[] {
  const keys: string[] = [];
  for (const [key, field] of Object.entries(shape)) {
    keys.push(prefix + key);
    let inner: z.ZodType = field;
    while (inner instanceof z.ZodDefault || inner instanceof z.ZodOptional || inner instanceof z.ZodNullable)
      inner = inner.unwrap() as z.ZodType;
    if (inner instanceof z.ZodObject)
      keys.push(...schemaKeys(inner.shape as Record<string, z.ZodType>, `${prefix}${key}.`));
  }
  return keys;
}

/** The keys in the first column of the table under "## Keys". */
function documentedKeys(doc: string): string[] {
  const section = doc.split(/^## Keys$/m)[1]!.split(/^## /m)[0]!;
  return [...section.matchAll(/^\| `([A-Za-z0-9.]+)` \|/gm)].map((m) => m[1]!);
}

describe('docs/configuration.md', () => {
  const doc = read('docs/configuration.md');

  it('lists exactly the keys of the configuration schema', () => {
    const inSchema = schemaKeys(configSchema.shape as Record<string, z.ZodType>).sort();
    const inDoc = documentedKeys(doc).sort();
    expect(
      inDoc.filter((k) => !inSchema.includes(k)),
      'documented but not in server/base/config.ts',
    ).toEqual([]);
    expect(
      inSchema.filter((k) => !inDoc.includes(k)),
      'in server/base/config.ts but not documented in docs/configuration.md',
    ).toEqual([]);
    expect(new Set(inDoc).size, 'a key documented twice').toBe(inDoc.length);
  });

  it('names every environment variable the configuration reads', () => {
    const source = read('server/base/config.ts');
    const names = [...new Set([...source.matchAll(/\b((?:HERALD|DATABASE)_[A-Z0-9_]+)\b/g)].map((m) => m[1]!))];
    expect(names.length).toBeGreaterThan(10);
    expect(names.filter((name) => !doc.includes(`\`${name}\``))).toEqual([]);
  });
});

describe('docs/config-as-code.md', () => {
  it('says what applying each list of the configuration document does, and lists no other', () => {
    const doc = read('docs/config-as-code.md');
    const table = doc.split('What each list means when applied:')[1]!.split('\n\n')[1]!;
    const documented = [...table.matchAll(/^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \|/gm)].flatMap((m) =>
      [...m[1]!.matchAll(/`([a-z_]+)`/g)].map((n) => n[1]!),
    );
    const lists = Object.keys(ConfigurationDocument.shape).filter((key) => key !== 'version');
    expect(documented.sort()).toEqual(lists.sort());
  });
});

describe('docs/cli.md', () => {
  it('lists every herald command', async () => {
    const commands = commandNames(await loadProgram());
    expect(commands.length).toBeGreaterThan(30);
    const doc = read('docs/cli.md');
    const missing = commands.filter((name) => !new RegExp(`^#+ \`${name}[ \`]`, 'm').test(doc));
    expect(missing, 'add them to docs/cli.md (node test/support/cli-reference.ts prints the reference)').toEqual([]);
  });
});

/** The text a command's --help prints, the examples after it included. */
function helpOf(command: Command): string {
  let text = '';
  command.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
  command.outputHelp();
  return text;
}

/** The words of a command line as a shell splits them (quotes removed), up to a pipe, list or comment. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const [, double, single, bare] of line.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s"'|;&#)]+)|[|;&#)]/g)) {
    if (double === undefined && single === undefined && bare === undefined) break;
    words.push(double ?? single ?? bare!);
  }
  return words;
}

/** The herald invocations of an example line (where a command starts: the line, a pipe, `$(`): their words. */
function heraldCalls(line: string): string[][] {
  return [...line.matchAll(/(?:^|[|;&(])\s*(?:[A-Z_]+=\S*\s+)*(?:bin\/)?herald(?=\s)/g)].map((m) =>
    shellWords(line.slice(m.index + m[0].length)),
  );
}

/** A command's full name, as typed: "herald topics create". */
const pathOf = (command: Command): string =>
  command.parent ? `${pathOf(command.parent)} ${command.name()}` : command.name();

/** The options a command takes: its own, its ancestors' (the program's --version) and --help. */
function optionNames(command: Command): Set<string> {
  const names = new Set(['--help', '-h']);
  for (let c: Command | null = command; c; c = c.parent)
    for (const option of c.options) for (const flag of [option.long, option.short]) if (flag) names.add(flag);
  return names;
}

describe('herald <command> --help', () => {
  it('shows an example of every command, each with options that command has', async () => {
    const program = await loadProgram();
    const commands = everyCommand(program);
    expect(commands.length).toBeGreaterThan(90);
    const problems: string[] = [];
    for (const { name, command } of commands) {
      const examples = helpOf(command)
        .replace(/\\\n\s+/g, ' ')
        .split(/^Examples?:$/m)
        .slice(1)
        .flatMap((section) => [...section.matchAll(/^ {2}\$ (.+)$/gm)].map((m) => m[1]!));
      if (!examples.some((line) => new RegExp(`(^|[\\s($])${name}( |$)`).test(line)))
        problems.push(`${name}: no example`);
      for (const line of examples)
        for (const words of heraldCalls(line)) {
          let target: Command = program;
          for (const word of words) {
            const sub = target.commands.find((c) => c.name() === word);
            if (!sub) break;
            target = sub;
          }
          const known = optionNames(target);
          for (const word of words)
            if (/^--?[a-z]/.test(word) && !known.has(word.split('=')[0]!))
              problems.push(`${name}: ${line}: ${word.split('=')[0]} is no option of ${pathOf(target)}`);
        }
    }
    expect(problems).toEqual([]);
  });
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');

/** The anchors of a Markdown file's headings. */
const anchorsOf = (path: URL) => [...readFileSync(path, 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]!));

/** The documents, and CONTRIBUTING.md, which links into them. */
const WRITINGS = [...DOCUMENTS, 'CONTRIBUTING.md'];

/** Where a document's relative reference leads: from the document's own folder (docs/channels/ too). */
const resolveFrom = (document: string, target: string) => new URL(target, new URL(`../${document}`, import.meta.url));

describe('links between the documents', () => {
  it('lead to documents and headings that exist', () => {
    const broken: string[] = [];
    for (const document of WRITINGS) {
      for (const [, target, anchor] of read(document).matchAll(/\]\((?!https?:)([^)#\s]*)(?:#([^)\s]+))?\)/g)) {
        const path = target ? resolveFrom(document, target) : new URL(`../${document}`, import.meta.url);
        if (!existsSync(path)) {
          broken.push(`${document}: ${target}`);
          continue;
        }
        if (anchor && path.pathname.endsWith('.md') && !anchorsOf(path).includes(anchor))
          broken.push(`${document}: ${target}#${anchor}`);
      }
    }
    expect(WRITINGS.length).toBeGreaterThan(8);
    expect(broken).toEqual([]);
  });

  it('name the sections of other documents by headings those have ("README\'s "...""), else they link', () => {
    const broken: string[] = [];
    for (const document of WRITINGS) {
      for (const [reference, name, title] of read(document).matchAll(
        /(\bREADME|[\w./-]+\.md)(?:'s)?,?\s+"([^"\n]+)"/g,
      )) {
        const file = name === 'README' ? 'README.md' : name!;
        const path = [resolveFrom(document, file), new URL(`../${file}`, import.meta.url)].find((p) => existsSync(p));
        if (!path || !anchorsOf(path).includes(anchorOf(title!)))
          broken.push(`${document}: ${reference!.replace(/\s+/g, ' ')}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('the shell examples of the documents', () => {
  it('use only variables the document sets, Herald reads, or the reader brings', () => {
    const herald = new Set(
      [...`${read('docs/configuration.md')}${read('docs/cli.md')}`.matchAll(/`((?:HERALD|DATABASE)_[A-Z0-9_]+)`/g)].map(
        (m) => m[1]!,
      ),
    );
    const known = new Set([...herald, ...Object.keys(READERS_OWN), 'PWD', 'HOME']);
    const unset: string[] = [];
    for (const document of DOCUMENTS) {
      const text = read(document);
      const spans = [...text.replace(/^```[\s\S]*?^```$/gm, '').matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
      const blocks = shellBlocks(document)
        .flat()
        .map((example) => example.text);
      // Commands written inline (a curl or herald call) count as examples; `NAME=value` spans set a name.
      const commands = [...blocks, ...spans.filter((span) => /^(curl|herald|bin\/herald) /.test(span))];
      const set = new Set(
        [...[...blocks, ...spans].join('\n').matchAll(/(?:^|[\s;(])(?:export\s+)?([A-Za-z_]\w*)=/gm)].map((m) => m[1]!),
      );
      for (const [, name] of commands.join('\n').matchAll(/\$\{?([A-Za-z_]\w*)/g))
        if (!set.has(name!) && !known.has(name!)) unset.push(`${document}: $${name}`);
    }
    expect(herald.size).toBeGreaterThan(10);
    expect([...new Set(unset)]).toEqual([]);
  });
});

// The shell examples of README.md and docs/**/*.md: the lines of their ```sh blocks, and what tells a herald
// command line from the rest. test/docs-examples.test.ts runs them; test/docs.test.ts checks that every
// variable they use is set by the document, Herald's own, or the reader's (READERS_OWN).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A shell example line: its document, its line number, and the command as printed (continuations joined). */
export interface Example {
  doc: string;
  line: number;
  text: string;
}

/**
 * The lines of a document's ```sh blocks, each continued line joined to the one it continues: after a
 * trailing backslash, and inside a single-quoted string left open (a JSON body over several lines).
 */
export function shellBlocks(doc: string): Example[][] {
  const lines = readFileSync(join(ROOT, doc), 'utf8').split('\n');
  const blocks: Example[][] = [];
  let block: Example[] | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (block === null) {
      if (/^```(sh|bash)\s*$/.test(line)) block = [];
      continue;
    }
    if (line.startsWith('```')) {
      blocks.push(block);
      block = null;
      continue;
    }
    let text = line;
    const start = i + 1;
    for (;;) {
      if (/\\$/.test(text) && i + 1 < lines.length) text = `${text.slice(0, -1)} ${lines[++i]!.trim()}`;
      else if (opensQuote(text) && i + 1 < lines.length) text = `${text}\n${lines[++i]!}`;
      else break;
    }
    block.push({ doc, line: start, text });
  }
  return blocks;
}

/** Whether a command line ends inside a single-quoted string (quotes in double quotes and comments aside). */
function opensQuote(text: string): boolean {
  if (/^\s*#/.test(text)) return false;
  const words = text.match(/"(?:[^"\\]|\\.)*"|'[^']*'|\s#.*|'[^']*$|[^\s"'#]+|\S/g) ?? [];
  return words.some((word) => word.startsWith("'") && (word.length === 1 || !word.endsWith("'")));
}

/** Whether a line runs herald (at the start of a command: the line, after a pipe or `;`, in `$(`). */
export const runsHerald = (text: string) => /(?:^|[|;&(]|\$\()\s*(?:[A-Z_]+=\S*\s+)*(?:bin\/)?herald\s/.test(text);
/** Whether a line starts by setting variables (`export A=1 B=2`, `A=$(...)`), for the lines after it. */
export const setsVariables = (text: string) => /^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*=/.test(text);

/** README.md and the documents under docs/, its subfolders' (docs/channels/) included. */
export const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

/** The reader's own values the examples name (a secret of theirs, their CI's build number). */
export const READERS_OWN = {
  SMTP_PASSWORD: 'an smtp password',
  CI_BUILD_ID: '1234',
  GITHUB_SECRET: 'a github client secret',
  OKTA_SECRET: 'an okta client secret',
  ENTRA_SECRET: 'an entra client secret',
  KEYCLOAK_SECRET: 'a keycloak client secret',
  SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T0000000000/B0000000000/a-slack-webhook-secret',
  TWILIO_AUTH_TOKEN: 'a twilio auth token',
  VONAGE_API_SECRET: 'a vonage api secret',
  VONAGE_SIGNATURE_SECRET: 'a vonage signature secret',
  DEV_PASSWORD: 'a password of ten or more characters',
};

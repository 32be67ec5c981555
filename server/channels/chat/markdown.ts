// The Markdown subset chat templates are written in, rendered in each chat provider's own syntax.
// The subset: **bold**, _italic_ (or *italic*), [text](https://url), `inline code`, ``` code blocks ```,
// bullet lists (- item, * item), headings (# title), paragraphs and line breaks; a backslash escapes a
// marker. Anything else is text, escaped as the provider needs, so a variable's value (a contact's
// name, an order note) can neither add formatting nor, in Slack, mention @channel with <!channel>.
// Providers: Slack mrkdwn, Microsoft Teams (Adaptive Card TextBlock markdown), Discord and
// Mattermost markdown, Telegram HTML (parse_mode HTML), Google Chat text formatting.

type Inline =
  | { t: 'text'; text: string }
  | { t: 'bold'; children: Inline[] }
  | { t: 'italic'; children: Inline[] }
  | { t: 'code'; text: string }
  | { t: 'link'; url: string; children: Inline[] };

type Block =
  | { t: 'paragraph'; lines: Inline[][] }
  | { t: 'heading'; children: Inline[] }
  | { t: 'list'; items: Inline[][] }
  | { t: 'code'; text: string };

export type ChatSyntax = 'slack' | 'teams' | 'discord' | 'mattermost' | 'telegram' | 'google_chat';

const ESCAPABLE = /[\\`*_[\]()#~>|-]/;
const LINK = /^\[([^\]\n]+)\]\(((?:https?:\/\/|mailto:)[^\s)]+)\)/;
const WORD = /[\p{L}\p{N}]/u;

function parseInline(source: string): Inline[] {
  const out: Inline[] = [];
  let buffer = '';
  const flush = () => {
    if (buffer) out.push({ t: 'text', text: buffer });
    buffer = '';
  };
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (c === '\\' && i + 1 < source.length && ESCAPABLE.test(source[i + 1]!)) {
      buffer += source[i + 1];
      i += 2;
      continue;
    }
    if (c === '`') {
      const end = source.indexOf('`', i + 1);
      if (end > i + 1) {
        flush();
        out.push({ t: 'code', text: source.slice(i + 1, end) });
        i = end + 1;
        continue;
      }
    }
    if (source.startsWith('**', i) || source.startsWith('__', i)) {
      const marker = source.slice(i, i + 2);
      const end = source.indexOf(marker, i + 2);
      if (end > i + 2) {
        flush();
        out.push({ t: 'bold', children: parseInline(source.slice(i + 2, end)) });
        i = end + 2;
        continue;
      }
    }
    if ((c === '_' || c === '*') && !WORD.test(source[i - 1] ?? '') && source[i + 1] && source[i + 1] !== ' ') {
      const end = closingMarker(source, c, i + 1);
      if (end > i + 1) {
        flush();
        out.push({ t: 'italic', children: parseInline(source.slice(i + 1, end)) });
        i = end + 1;
        continue;
      }
    }
    if (c === '[') {
      const link = LINK.exec(source.slice(i));
      if (link) {
        flush();
        out.push({ t: 'link', url: link[2]!, children: parseInline(link[1]!) });
        i += link[0].length;
        continue;
      }
    }
    buffer += c;
    i += 1;
  }
  flush();
  return out;
}

/** The closing single marker of an italic span: not after a space, not inside a word (snake_case stays text). */
function closingMarker(source: string, marker: string, from: number): number {
  for (let j = from; j < source.length; j++) {
    if (source[j] === '\\') {
      j += 1;
      continue;
    }
    if (source[j] === marker && source[j - 1] !== ' ' && !WORD.test(source[j + 1] ?? '')) {
      if (marker === '*' && source[j + 1] === '*') continue;
      return j;
    }
  }
  return -1;
}

function parseBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n');
  let paragraph: Inline[][] | null = null;
  let list: Inline[][] | null = null;
  const close = () => {
    paragraph = null;
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^\s*```/.test(line)) {
      close();
      const code: string[] = [];
      let j = i + 1;
      while (j < lines.length && !/^\s*```\s*$/.test(lines[j]!)) code.push(lines[j++]!);
      blocks.push({ t: 'code', text: code.join('\n') });
      i = j;
      continue;
    }
    if (line.trim() === '') {
      close();
      continue;
    }
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (heading) {
      close();
      blocks.push({ t: 'heading', children: parseInline(heading[1]!.trim()) });
      continue;
    }
    const item = /^\s*[-*+]\s+(.*)$/.exec(line);
    if (item) {
      paragraph = null;
      if (!list) {
        list = [];
        blocks.push({ t: 'list', items: list });
      }
      list.push(parseInline(item[1]!));
      continue;
    }
    list = null;
    if (!paragraph) {
      paragraph = [];
      blocks.push({ t: 'paragraph', lines: paragraph });
    }
    paragraph.push(parseInline(line));
  }
  return blocks;
}

/** How one provider writes each piece of the subset. */
interface Syntax {
  text(text: string): string;
  bold(inner: string): string;
  italic(inner: string): string;
  code(text: string): string;
  link(url: string, inner: string): string;
  codeBlock(text: string): string;
  heading(inner: string): string;
  bullet(inner: string): string;
}

const escapeSlack = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escapeMarkdown = (text: string) => text.replace(/([\\`*_~|[\]])/g, '\\$1');
/** A code span that holds backticks needs a longer fence. */
const codeSpan = (text: string) => (text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``);

const SYNTAXES: Record<ChatSyntax, Syntax> = {
  slack: {
    text: escapeSlack,
    bold: (s) => `*${s}*`,
    italic: (s) => `_${s}_`,
    code: (s) => `\`${escapeSlack(s)}\``,
    link: (url, s) => `<${escapeSlack(url).replace(/\|/g, '%7C')}|${s.replace(/\|/g, '¦')}>`,
    codeBlock: (s) => `\`\`\`\n${escapeSlack(s)}\n\`\`\``,
    heading: (s) => `*${s}*`,
    bullet: (s) => `• ${s}`,
  },
  google_chat: {
    text: (s) => s,
    bold: (s) => `*${s}*`,
    italic: (s) => `_${s}_`,
    code: (s) => `\`${s}\``,
    link: (url, s) => `<${url.replace(/\|/g, '%7C')}|${s.replace(/[|>]/g, ' ')}>`,
    codeBlock: (s) => `\`\`\`\n${s}\n\`\`\``,
    heading: (s) => `*${s}*`,
    bullet: (s) => `• ${s}`,
  },
  telegram: {
    text: escapeHtml,
    bold: (s) => `<b>${s}</b>`,
    italic: (s) => `<i>${s}</i>`,
    code: (s) => `<code>${escapeHtml(s)}</code>`,
    link: (url, s) => `<a href="${escapeHtml(url).replace(/"/g, '&quot;')}">${s}</a>`,
    codeBlock: (s) => `<pre>${escapeHtml(s)}</pre>`,
    heading: (s) => `<b>${s}</b>`,
    bullet: (s) => `• ${s}`,
  },
  discord: {
    text: escapeMarkdown,
    bold: (s) => `**${s}**`,
    italic: (s) => `*${s}*`,
    code: codeSpan,
    link: (url, s) => `[${s}](${url})`,
    codeBlock: (s) => `\`\`\`\n${s}\n\`\`\``,
    heading: (s) => `## ${s}`,
    bullet: (s) => `- ${s}`,
  },
  mattermost: {
    text: escapeMarkdown,
    bold: (s) => `**${s}**`,
    italic: (s) => `_${s}_`,
    code: codeSpan,
    link: (url, s) => `[${s}](${url})`,
    codeBlock: (s) => `\`\`\`\n${s}\n\`\`\``,
    heading: (s) => `#### ${s}`,
    bullet: (s) => `- ${s}`,
  },
  // Adaptive Card TextBlocks know bold, italic, links and lists only: code shows as its text, a
  // heading as bold.
  teams: {
    text: (s) => s,
    bold: (s) => `**${s}**`,
    italic: (s) => `_${s}_`,
    code: (s) => s,
    link: (url, s) => `[${s}](${url})`,
    codeBlock: (s) => s,
    heading: (s) => `**${s}**`,
    bullet: (s) => `- ${s}`,
  },
};

function renderInline(nodes: Inline[], syntax: Syntax): string {
  return nodes
    .map((node) => {
      switch (node.t) {
        case 'text':
          return syntax.text(node.text);
        case 'bold':
          return syntax.bold(renderInline(node.children, syntax));
        case 'italic':
          return syntax.italic(renderInline(node.children, syntax));
        case 'code':
          return syntax.code(node.text);
        case 'link':
          return syntax.link(node.url, renderInline(node.children, syntax));
      }
    })
    .join('');
}

/** The Markdown subset in the provider's syntax. */
export function renderChatMarkdown(markdown: string, provider: ChatSyntax): string {
  const syntax = SYNTAXES[provider];
  return parseBlocks(markdown)
    .map((block) => {
      switch (block.t) {
        case 'paragraph':
          return block.lines.map((line) => renderInline(line, syntax)).join('\n');
        case 'heading':
          return syntax.heading(renderInline(block.children, syntax));
        case 'list':
          // Teams' TextBlock needs a blank line before a list and one item per line.
          return block.items.map((item) => syntax.bullet(renderInline(item, syntax))).join('\n');
        case 'code':
          return syntax.codeBlock(block.text);
      }
    })
    .join('\n\n');
}

/** Plain text (a title) escaped for the provider, so it shows as written. */
export function chatText(text: string, provider: ChatSyntax): string {
  return SYNTAXES[provider].text(text);
}

/** Plain text made bold in the provider's syntax (a message's title). */
export function chatBold(text: string, provider: ChatSyntax): string {
  const syntax = SYNTAXES[provider];
  return text.trim() ? syntax.bold(syntax.text(text.trim())) : '';
}

// The Telegram Bot API's sendMessage: POST /bot{token}/sendMessage with {chat_id, text, parse_mode?} as
// JSON or a form. Answers {"ok": true, "result": Message} or {"ok": false, "error_code", "description"}
// with the HTTP status equal to error_code, as Telegram does. MarkdownV2 and HTML texts are parsed the
// way Telegram parses them, so an unescaped reserved character or an unknown tag is the same 400
// "can't parse entities" Herald would get from the real API.
import {
  asObject,
  isForm,
  isJson,
  parseForm,
  parseJson,
  pathOf,
  queryOf,
  randomFrom,
  startPeerServer,
  type PeerControls,
  type RawRequest,
  type Reply,
} from './base.ts';

export interface TelegramMessage {
  messageId: number;
  /** chat_id as sent, as a string. */
  chatId: string;
  /** The text as sent, markup included. */
  text: string;
  parseMode?: string;
  /** The text as a user sees it: markup removed, escapes resolved. */
  plain: string;
  payload: Record<string, unknown>;
  at: number;
}

export interface TelegramPeer extends PeerControls {
  token: string;
  /** Chat ids (as strings, "@channel" names too) that exist. */
  chats: Set<string>;
  /** Chats whose user blocked the bot: 403. */
  blocked: Set<string>;
  received: TelegramMessage[];
  /** The next `count` requests get Telegram's 429 with retry_after `retryAfterSeconds`. */
  rateLimitNext(count: number, retryAfterSeconds?: number): void;
}

const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-';

function telegramError(code: number, description: string, parameters?: object): Reply {
  return {
    status: code,
    body: { ok: false, error_code: code, description, ...(parameters ? { parameters } : {}) },
  };
}

export async function startTelegramPeer(
  options: { token?: string; chats?: Iterable<string | number>; blocked?: Iterable<string | number> } = {},
): Promise<TelegramPeer> {
  const token = options.token ?? `${randomFrom('123456789', 10)}:AA${randomFrom(TOKEN_ALPHABET, 33)}`;
  const botId = Number(token.split(':')[0]);
  const chats = new Set([...(options.chats ?? [])].map(String));
  const blocked = new Set([...(options.blocked ?? [])].map(String));
  const received: TelegramMessage[] = [];
  let messageId = 0;

  const handle = (request: RawRequest): Reply => {
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(pathOf(request));
    if (!match) return telegramError(404, 'Not Found');
    if (match[1] !== token) return telegramError(401, 'Unauthorized');
    if (match[2] !== 'sendMessage') return telegramError(404, 'Not Found');
    const payload: Record<string, unknown> = Object.fromEntries(queryOf(request));
    if (isJson(request)) Object.assign(payload, asObject(parseJson(request.body)) ?? {});
    else if (isForm(request)) Object.assign(payload, parseForm(request.body));
    const chatId = payload.chat_id === undefined || payload.chat_id === '' ? '' : String(payload.chat_id);
    if (!chatId) return telegramError(400, 'Bad Request: chat_id is empty');
    const text = typeof payload.text === 'string' ? payload.text : '';
    if (!text.trim()) return telegramError(400, 'Bad Request: message text is empty');
    const parseMode = typeof payload.parse_mode === 'string' ? payload.parse_mode : undefined;
    let plain = text;
    if (parseMode) {
      const parsed = parseEntities(text, parseMode);
      if ('error' in parsed) return telegramError(400, `Bad Request: ${parsed.error}`);
      plain = parsed.plain;
    }
    if (!plain.trim()) return telegramError(400, 'Bad Request: message text is empty');
    if (plain.length > 4096) return telegramError(400, 'Bad Request: message is too long');
    if (!chats.has(chatId)) return telegramError(400, 'Bad Request: chat not found');
    if (blocked.has(chatId)) return telegramError(403, 'Forbidden: bot was blocked by the user');
    const message: TelegramMessage = {
      messageId: ++messageId,
      chatId,
      text,
      ...(parseMode ? { parseMode } : {}),
      plain,
      payload,
      at: Date.now(),
    };
    received.push(message);
    return {
      status: 200,
      body: {
        ok: true,
        result: {
          message_id: message.messageId,
          from: { id: botId, is_bot: true, first_name: 'Herald', username: 'herald_test_bot' },
          chat: chatOf(chatId),
          date: Math.floor(message.at / 1000),
          text: plain,
        },
      },
    };
  };

  const controls = await startPeerServer(handle);
  return Object.assign(controls, {
    token,
    chats,
    blocked,
    received,
    rateLimitNext(count: number, retryAfterSeconds = 1) {
      controls.failNext(count, {
        ...telegramError(429, `Too Many Requests: retry after ${retryAfterSeconds}`, {
          retry_after: retryAfterSeconds,
        }),
        headers: { 'retry-after': String(retryAfterSeconds) },
      });
    },
  });
}

function chatOf(chatId: string): Record<string, unknown> {
  if (chatId.startsWith('@')) {
    return { id: -1001000000000 - chatId.length, title: chatId.slice(1), username: chatId.slice(1), type: 'channel' };
  }
  const id = Number(chatId);
  if (id > 0) return { id, first_name: 'Test', type: 'private' };
  return { id, title: 'Test group', type: chatId.startsWith('-100') ? 'supergroup' : 'group' };
}

type Parsed = { plain: string } | { error: string };

/** Parses a text as Telegram does for the given parse_mode. */
export function parseEntities(text: string, parseMode: string): Parsed {
  if (parseMode === 'MarkdownV2') return parseMarkdownV2(text);
  if (parseMode === 'HTML') return parseHtml(text);
  if (parseMode === 'Markdown') return { plain: text.replace(/[*_`[\]]/g, '') };
  return { error: 'unsupported parse_mode' };
}

const RESERVED = '_*[]()~`>#+-=|{}.!';
const ENTITY_NAMES: Record<string, string> = {
  '*': 'Bold',
  _: 'Italic',
  __: 'Underline',
  '~': 'Strikethrough',
  '||': 'Spoiler',
  '[': 'TextUrl',
};

function byteOffset(text: string, index: number): number {
  return Buffer.byteLength(text.slice(0, index), 'utf8');
}

function parseMarkdownV2(text: string): Parsed {
  const open: Array<{ marker: string; at: number }> = [];
  let plain = '';
  let lineStart = true;
  let i = 0;
  const fail = (message: string): Parsed => ({ error: `can't parse entities: ${message}` });
  const reserved = (c: string, at: number) =>
    fail(
      `Character '${c}' is reserved and must be escaped with the preceding '\\' at byte offset ${byteOffset(text, at)}`,
    );
  // Reads up to the closing `close`, where only `close`'s character and '\' may be escaped.
  const until = (from: number, close: string): { content: string; end: number } | undefined => {
    let content = '';
    for (let j = from; j < text.length; j++) {
      if (text[j] === '\\' && j + 1 < text.length) {
        content += text[++j];
      } else if (text.startsWith(close, j)) {
        return { content, end: j + close.length };
      } else {
        content += text[j];
      }
    }
    return undefined;
  };
  const toggle = (marker: string) => {
    if (open.at(-1)?.marker === marker) open.pop();
    else open.push({ marker, at: i });
    i += marker.length;
  };

  while (i < text.length) {
    const c = text[i]!;
    const atLineStart = lineStart;
    lineStart = false;
    if (c === '\\') {
      if (i + 1 < text.length) plain += text[i + 1];
      i += 2;
    } else if (atLineStart && c === '>') {
      i += 1;
    } else if (atLineStart && text.startsWith('**>', i)) {
      i += 3;
    } else if (text.startsWith('```', i)) {
      const block = until(i + 3, '```');
      if (!block) return fail(`Can't find end of Pre entity at byte offset ${byteOffset(text, i)}`);
      plain += block.content.replace(/^[^\n`]*\n/, '');
      i = block.end;
    } else if (c === '`') {
      const code = until(i + 1, '`');
      if (!code) return fail(`Can't find end of Code entity at byte offset ${byteOffset(text, i)}`);
      plain += code.content;
      i = code.end;
    } else if (c === '*' || c === '~') {
      toggle(c);
    } else if (c === '_') {
      toggle(text[i + 1] === '_' ? '__' : '_');
    } else if (c === '|') {
      if (text[i + 1] !== '|') return reserved(c, i);
      toggle('||');
    } else if (c === '[') {
      open.push({ marker: '[', at: i });
      i += 1;
    } else if (c === ']') {
      if (open.at(-1)?.marker !== '[') return reserved(c, i);
      if (text[i + 1] !== '(') return fail(`Can't find end of a URL at byte offset ${byteOffset(text, i)}`);
      const url = until(i + 2, ')');
      if (!url) return fail(`Can't find end of a URL at byte offset ${byteOffset(text, i)}`);
      open.pop();
      i = url.end;
    } else if (RESERVED.includes(c)) {
      return reserved(c, i);
    } else {
      plain += c;
      lineStart = c === '\n';
      i += 1;
    }
  }
  const unclosed = open.at(-1);
  if (unclosed) {
    return fail(
      `Can't find end of ${ENTITY_NAMES[unclosed.marker]} entity at byte offset ${byteOffset(text, unclosed.at)}`,
    );
  }
  return { plain };
}

const HTML_TAGS = new Set([
  'b',
  'strong',
  'i',
  'em',
  'u',
  'ins',
  's',
  'strike',
  'del',
  'span',
  'tg-spoiler',
  'a',
  'tg-emoji',
  'code',
  'pre',
  'blockquote',
]);
const HTML_ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"' };

function parseHtml(text: string): Parsed {
  const open: string[] = [];
  let plain = '';
  const fail = (message: string): Parsed => ({ error: `can't parse entities: ${message}` });
  for (let i = 0; i < text.length;) {
    const c = text[i]!;
    if (c === '<') {
      const tag = /^<(\/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[^>]*)?)>/.exec(text.slice(i));
      if (!tag) return fail(`Unexpected end of name token at byte offset ${byteOffset(text, i)}`);
      const [whole, closing, rawName] = tag as unknown as [string, string, string];
      const name = rawName.toLowerCase();
      if (!HTML_TAGS.has(name)) {
        return fail(`Unsupported ${closing ? 'end' : 'start'} tag "${name}" at byte offset ${byteOffset(text, i)}`);
      }
      if (closing) {
        if (open.at(-1) !== name) {
          return fail(
            `Unmatched end tag at byte offset ${byteOffset(text, i)}, expected "</${open.at(-1) ?? ''}>", found "</${name}>"`,
          );
        }
        open.pop();
      } else {
        open.push(name);
      }
      i += whole.length;
    } else if (c === '&') {
      const entity = /^&(#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);/.exec(text.slice(i));
      const name = entity?.[1];
      if (name?.startsWith('#x')) plain += String.fromCodePoint(parseInt(name.slice(2), 16));
      else if (name?.startsWith('#')) plain += String.fromCodePoint(Number(name.slice(1)));
      else if (name && HTML_ENTITIES[name]) plain += HTML_ENTITIES[name];
      else {
        plain += '&';
        i += 1;
        continue;
      }
      i += entity![0].length;
    } else {
      plain += c;
      i += 1;
    }
  }
  if (open.length) return fail(`Can't find end tag corresponding to start tag "${open.at(-1)}"`);
  return { plain };
}

// Composing a mail into its RFC 5322 message in one synchronous pass. The output is the bytes
// nodemailer's own build (MailComposer) gives for the same mail, Message-ID and boundary, and the
// encoding is nodemailer's throughout: its header word encoding, line folding, address encoding and
// base64 encoder, and quoted-printable as its encoder writes it (quoted-printable.ts).
//
// The mails Herald sends have one shape: From (a brand or transport sender) and maybe Reply-To, one
// recipient with a plain address, a subject, an HTML part and its text part, maybe the one-click
// unsubscribe headers. Such a mail is written directly, with the From and Reply-To values encoded
// once per distinct value; building nodemailer's MIME tree for it costs more than the whole SMTP
// exchange. Any other mail (a recipient with a display name or a non-ASCII address, several
// recipients, other headers) takes MailComposer's tree, serialised in one pass.
import { randomUUID } from 'node:crypto';
import { domainToASCII } from 'node:url';
import MailComposer from 'nodemailer/lib/mail-composer';
import MimeNode from 'nodemailer/lib/mime-node';
import * as base64 from 'nodemailer/lib/base64';
import * as mimeFuncs from 'nodemailer/lib/mime-funcs';
import { quotedPrintable } from './quoted-printable.ts';
import type { OutgoingMail } from './smtp.ts';
import type { SmtpEnvelope } from './smtp-connections.ts';

export interface ComposedMail {
  message: Buffer;
  /** The Message-ID header's value. */
  messageId: string;
  /** MAIL FROM (false: the null sender) and RCPT TO, as nodemailer derives them from the headers or the mail's envelope. */
  envelope: SmtpEnvelope;
}

/** RFC 2045's limit on an encoded line, and nodemailer's width for folded headers. */
const LINE_LENGTH = 76;

export function composeMail(mail: OutgoingMail): ComposedMail {
  const messageId = `<${randomUUID()}@${senderDomain(mail)}>`;
  const baseBoundary = randomUUID().replaceAll('-', '');
  const composed = writesDirectly(mail)
    ? writeDirectly(mail, messageId, baseBoundary)
    : writeWithMailComposer(mail, messageId, baseBoundary);
  return { ...composed, messageId };
}

/** The domain of the envelope sender, else of the From address, for the Message-ID (as nodemailer picks it). */
function senderDomain(mail: OutgoingMail): string {
  const from = mail.envelope?.from ?? mail.from;
  const domain = /@([^@<>\s"]+)>?\s*$/.exec(from)?.[1];
  return (domain && domainToASCII(domain)) || 'localhost';
}

// An address that every step of nodemailer's address handling leaves as it is: a dot-atom local
// part of ASCII characters, and a lower-case ASCII domain that is neither an A-label (xn--) nor read
// as an IPv4 address (its last label starts with a letter).
const ATEXT = "[A-Za-z0-9!#$%&'*+\\-/=?^_`{|}~]+";
const LABEL = '[a-z0-9](?:[a-z0-9-]*[a-z0-9])?';
const PLAIN_ADDRESS = new RegExp(`^${ATEXT}(?:\\.${ATEXT})*@(?:${LABEL}\\.)*[a-z](?:[a-z0-9-]*[a-z0-9])?$`);
const isPlainAddress = (value: string) => value.length <= 254 && PLAIN_ADDRESS.test(value) && !value.includes('xn--');

/** The extra headers written directly: those Herald adds, in the form nodemailer gives their names. */
const PLAIN_HEADERS = new Set(['List-Unsubscribe', 'List-Unsubscribe-Post']);

/** Whether the mail has the shape written directly (exported for the tests, which check both ways against nodemailer). */
export function writesDirectly(mail: OutgoingMail): mail is OutgoingMail & { to: string } {
  if (typeof mail.to !== 'string' || !isPlainAddress(mail.to)) return false;
  if (!mail.html && !mail.text) return false;
  if (mail.envelope) {
    const { from, to } = mail.envelope;
    if (
      !isPlainAddress(from) ||
      !(typeof to === 'string' ? isPlainAddress(to) : to.length > 0 && to.every(isPlainAddress))
    )
      return false;
  }
  return Object.keys(mail.headers ?? {}).every((key) => PLAIN_HEADERS.has(key));
}

function writeDirectly(
  mail: OutgoingMail & { to: string },
  messageId: string,
  baseBoundary: string,
): Omit<ComposedMail, 'messageId'> {
  const from = addressHeader('From', mail.from);
  const headers: string[] = [];
  for (const [key, value] of Object.entries(mail.headers ?? {})) headerLine(headers, key, textHeaderValue(value));
  headerLine(headers, 'From', from.value);
  headerLine(headers, 'To', mail.to);
  if (mail.replyTo) headerLine(headers, 'Reply-To', addressHeader('Reply-To', mail.replyTo).value);
  if (mail.subject) headerLine(headers, 'Subject', textHeaderValue(mail.subject));
  headerLine(headers, 'Message-ID', messageId);

  const parts = [
    mail.text ? textPart(PLAIN_TEXT, mail.text) : null,
    mail.html ? textPart(HTML_TEXT, mail.html) : null,
  ].filter((part) => part !== null);
  let message: string;
  if (parts.length === 1) {
    const [part] = parts as [TextPart];
    headerLine(headers, 'Content-Transfer-Encoding', part.encoding);
    headers.push(dateLine(), MIME_VERSION, part.contentTypeLine);
    message = `${headers.join('\r\n')}\r\n\r\n${part.body}`;
  } else {
    const boundary = `--_NmP-${baseBoundary}-Part_1`;
    headers.push(
      dateLine(),
      MIME_VERSION,
      foldedLine('Content-Type', mimeFuncs.buildHeaderValue({ value: 'multipart/alternative', params: { boundary } })),
    );
    message = `${headers.join('\r\n')}\r\n\r\n`;
    parts.forEach((part, i) => {
      message += `${i > 0 ? '\r\n' : ''}--${boundary}\r\n${part.contentTypeLine}\r\nContent-Transfer-Encoding: ${part.encoding}\r\n\r\n${part.body}`;
    });
    message += `\r\n--${boundary}--\r\n`;
  }
  if (!message.endsWith('\n')) message += '\r\n'; // as nodemailer ends a message
  const envelope = mail.envelope
    ? {
        from: mail.envelope.from,
        to: [...new Set(typeof mail.envelope.to === 'string' ? [mail.envelope.to] : mail.envelope.to)],
      }
    : { from: from.address, to: [mail.to] };
  return { message: Buffer.from(message, 'utf8'), envelope };
}

const MIME_VERSION = 'MIME-Version: 1.0';
const dateLine = () => `Date: ${new Date().toUTCString().replace(/GMT/, '+0000')}`;

/** Appends `key: value` folded as nodemailer folds it; an empty value is left out, as nodemailer leaves it. */
function headerLine(headers: string[], key: string, value: string): void {
  if (value.trim()) headers.push(foldedLine(key, value));
}

const foldedLine = (key: string, value: string) => mimeFuncs.foldLines(`${key}: ${value}`, LINE_LENGTH);

/** An unstructured header's value (Subject, List-Unsubscribe): on one line, MIME-encoded where it needs to be. */
function textHeaderValue(raw: string): string {
  const value = raw.replace(/\r?\n|\r/g, ' ');
  // Control characters can only go out inside an encoded word.
  // eslint-disable-next-line no-control-regex -- control characters are what it looks for
  return /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(value)
    ? mimeFuncs.encodeWord(value, wordEncoding(value), 52)
    : mimeFuncs.encodeWords(value, wordEncoding(value), 52, true);
}

/** Q for mostly Latin text, B otherwise, as nodemailer chooses. */
function wordEncoding(value: string): 'Q' | 'B' {
  let nonLatin = 0;
  let latin = 0;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code <= 0x08 || code === 0x0b || code === 0x0c || (code >= 0x0e && code <= 0x1f) || code >= 0x80) nonLatin++;
    else if ((code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a)) latin++;
  }
  return nonLatin < latin ? 'Q' : 'B';
}

interface AddressHeader {
  value: string;
  /** Its first address: of a From header, MAIL FROM when the mail has no envelope (as nodemailer takes it). */
  address: string | false;
}

/** Encoded From and Reply-To values, by header and value: a run's mails share a handful of senders. */
const addressHeaders = new Map<string, AddressHeader>();
const MAX_ADDRESS_HEADERS = 1000;

function addressHeader(key: 'From' | 'Reply-To', raw: string): AddressHeader {
  const cacheKey = `${key}\n${raw}`;
  let header = addressHeaders.get(cacheKey);
  if (!header) {
    const node = new MimeNode().setHeader('From', raw);
    header = { value: node.encodeHeaderValue(key, raw), address: node.getEnvelope().from };
    if (addressHeaders.size >= MAX_ADDRESS_HEADERS) addressHeaders.clear();
    addressHeaders.set(cacheKey, header);
  }
  return header;
}

interface TextPart {
  contentTypeLine: string;
  encoding: '7bit' | 'quoted-printable' | 'base64';
  body: string;
}

const PLAIN_TEXT = foldedLine('Content-Type', 'text/plain; charset=utf-8');
const HTML_TEXT = foldedLine('Content-Type', 'text/html; charset=utf-8');

/** nodemailer's test for a line over LINE_LENGTH (any text over 128 kB counts as having one), its pattern compiled once. */
const LONGER_LINE = new RegExp(`^.{${LINE_LENGTH + 1},}`, 'm');
const hasLongerLines = (text: string) => text.length > 128 * 1024 || LONGER_LINE.test(text);

/** A text part encoded as nodemailer encodes it: as is when plain ASCII in short lines, else QP for mostly Latin text, else base64. */
function textPart(contentTypeLine: string, content: string): TextPart {
  const plain = mimeFuncs.isPlainText(content);
  if (plain && !hasLongerLines(content)) return { contentTypeLine, encoding: '7bit', body: content };
  // In plain text, wordEncoding finds no other characters than Latin letters to count.
  const encoding = plain ? (/[A-Za-z]/.test(content) ? 'Q' : 'B') : wordEncoding(content);
  return encoding === 'Q'
    ? { contentTypeLine, encoding: 'quoted-printable', body: quotedPrintable(content, LINE_LENGTH) }
    : { contentTypeLine, encoding: 'base64', body: base64.wrap(base64.encode(content), LINE_LENGTH) };
}

/** Any mail: nodemailer's MIME tree, serialised in one pass. */
function writeWithMailComposer(
  mail: OutgoingMail,
  messageId: string,
  baseBoundary: string,
): Omit<ComposedMail, 'messageId'> {
  const root = new MailComposer({
    messageId,
    baseBoundary,
    from: mail.from,
    to: mail.to,
    subject: mail.subject,
    html: mail.html,
    text: mail.text,
    replyTo: mail.replyTo,
    headers: mail.headers,
    ...(mail.envelope ? { envelope: mail.envelope } : {}),
  }).compile();
  const envelope = root.getEnvelope();
  let message = serializeNode(root);
  if (!message.endsWith('\n')) message += '\r\n'; // as nodemailer ends a message
  return { message: Buffer.from(message, 'utf8'), envelope: { from: envelope.from, to: envelope.to } };
}

/** The node's headers, its encoded content and its children, in the order nodemailer streams them. */
function serializeNode(node: MimeNode): string {
  let out = `${node.buildHeaders()}\r\n\r\n`;
  const content = node.content;
  if (content) {
    if (typeof content !== 'string') throw new Error('only text content is composed in one pass');
    const encoding = node.getTransferEncoding();
    if (encoding === 'quoted-printable') out += quotedPrintable(content, LINE_LENGTH);
    else if (encoding === 'base64') out += base64.wrap(base64.encode(content), LINE_LENGTH);
    else out += content;
  }
  if (node.multipart) {
    node.childNodes.forEach((child, i) => {
      out += `${i > 0 ? '\r\n' : ''}--${node.boundary}\r\n${serializeNode(child)}`;
    });
    out += `\r\n--${node.boundary}--\r\n`;
  }
  return out;
}

// Quoted-printable (RFC 2045) for a text part: the same output as nodemailer's encode and wrap, which
// the tests check on many inputs. nodemailer's encoder goes byte by byte over the UTF-8 bytes and its
// wrapper runs several regular expressions for every line; here the characters that need encoding
// are found by regular expressions over the string, and lines are cut by index. It matters for an
// email's HTML part: a single line of a few kilobytes, encoded for every message.

/**
 * A character written as =XX: anything but tab, line breaks and printable ASCII other than "=", and
 * a space or tab at the end of a line or of the text. Code points, so that a surrogate pair is one
 * character, encoded as its four UTF-8 bytes (a lone surrogate as U+FFFD's, as Buffer.from writes it).
 */
const NEEDS_ENCODING = /[^\t\n\r\x20-\x3c\x3e-\x7e]|[ \t](?=[\r\n]|$)/gu;
/** The same but "=": most texts need only their "=" encoded (an HTML part has one in every attribute). */
const NEEDS_ENCODING_BUT_EQUALS = /[^\t\n\r\x20-\x7e]|[ \t](?=[\r\n]|$)/u;
const HEX = '0123456789ABCDEF';
const escapeByte = (byte: number) => `=${HEX[byte >> 4]}${HEX[byte & 15]}`;
const ASCII_ESCAPES = Array.from({ length: 0x80 }, (_, code) => escapeByte(code));

function encodeCharacter(character: string): string {
  const code = character.charCodeAt(0);
  if (code < 0x80) return ASCII_ESCAPES[code]!;
  let out = '';
  for (const byte of Buffer.from(character, 'utf8')) out += escapeByte(byte);
  return out;
}

/** The text quoted-printable encoded and wrapped in lines of `lineLength` at most (soft breaks `=\r\n`). */
export function quotedPrintable(text: string, lineLength: number): string {
  const encoded = NEEDS_ENCODING_BUT_EQUALS.test(text)
    ? text.replace(NEEDS_ENCODING, encodeCharacter)
    : text.replaceAll('=', '=3D');
  return wrap(encoded, lineLength);
}

const isHex = (code: number) =>
  (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
/** Where a line is best cut when it has no line break near its end: after the last of these. */
const isBreak = (code: number) =>
  code === 0x20 || code === 0x09 || code === 0x2e || code === 0x2c || code === 0x21 || code === 0x3f;
/** Whether `line` ends with an escape sequence (=XX). */
const endsWithEscape = (line: string) =>
  line.length >= 3 &&
  line.charCodeAt(line.length - 3) === 0x3d &&
  isHex(line.charCodeAt(line.length - 2)) &&
  isHex(line.charCodeAt(line.length - 1));

/** Whether the line is nothing but one to four escape sequences (the bytes of one character at most). */
function isOneCharacter(line: string): boolean {
  if (line.length < 3 || line.length > 12 || line.length % 3 !== 0) return false;
  for (let i = 0; i < line.length; i += 3)
    if (line.charCodeAt(i) !== 0x3d || !isHex(line.charCodeAt(i + 1)) || !isHex(line.charCodeAt(i + 2))) return false;
  return true;
}

/** nodemailer's wrap: the same cuts, in the same order of preference. */
function wrap(text: string, lineLength: number): string {
  if (text.length <= lineLength) return text;
  const length = text.length;
  const margin = Math.floor(lineLength / 3);
  let pos = 0;
  let result = '';
  while (pos < length) {
    let line = text.slice(pos, pos + lineLength);
    // A hard line break within reach ends the line there.
    const crlf = line.indexOf('\r\n');
    if (crlf >= 0) {
      line = line.slice(0, crlf + 2);
      result += line;
      pos += line.length;
      continue;
    }
    if (line.endsWith('\n')) {
      result += line;
      pos += line.length;
      continue;
    }
    const tail = line.slice(-margin);
    const lastLf = tail.lastIndexOf('\n');
    if (lastLf >= 0 && tail.indexOf('\r', lastLf) < 0) {
      line = line.slice(0, line.length - (tail.length - lastLf - 1));
      result += line;
      pos += line.length;
      continue;
    }
    let lastBreak = -1;
    if (line.length > lineLength - margin)
      for (let i = tail.length - 1; i >= 0 && lastBreak < 0; i--) if (isBreak(tail.charCodeAt(i))) lastBreak = i;
    if (lastBreak >= 0) {
      line = line.slice(0, line.length - (tail.length - lastBreak - 1));
    } else if (endsWithPartialOrWholeEscape(line)) {
      // An escape sequence cut short goes to the next line whole.
      if (line.charCodeAt(line.length - 1) === 0x3d) line = line.slice(0, -1);
      else if (line.length >= 2 && line.charCodeAt(line.length - 2) === 0x3d && isHex(line.charCodeAt(line.length - 1)))
        line = line.slice(0, -2);
      // So do the bytes of a character cut short: back to the byte that starts it.
      while (line.length > 3 && line.length < length - pos && !isOneCharacter(line) && endsWithEscape(line)) {
        const code = parseInt(line.slice(-2), 16);
        if (code < 0x80) break;
        line = line.slice(0, -3);
        if (code >= 0xc0) break;
      }
    }
    if (!line.length) line = text.slice(pos, pos + lineLength);
    if (pos + line.length < length && !line.endsWith('\n')) {
      if (line.length === lineLength && endsWithEscape(line)) line = line.slice(0, -3);
      else if (line.length === lineLength) line = line.slice(0, -1);
      pos += line.length;
      line += '=\r\n';
    } else {
      pos += line.length;
    }
    result += line;
  }
  return result;
}

/** Whether the line ends with "=", "=X" or "=XX" (X a hex digit). */
function endsWithPartialOrWholeEscape(line: string): boolean {
  const n = line.length;
  if (n >= 1 && line.charCodeAt(n - 1) === 0x3d) return true;
  if (n >= 2 && line.charCodeAt(n - 2) === 0x3d && isHex(line.charCodeAt(n - 1))) return true;
  return endsWithEscape(line);
}

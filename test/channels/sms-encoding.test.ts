// SMS encoding and segment counts (3GPP TS 23.038/23.040): known answers.
import { describe, expect, it } from 'vitest';
import { smsLength } from '../../server/channels/sms/encoding.ts';

const a = (n: number) => 'a'.repeat(n);
const zh = (n: number) => 'Ж'.repeat(n);

describe('smsLength', () => {
  it.each([
    ['empty', '', 'gsm7', 0, 0],
    ['hello', 'hello', 'gsm7', 5, 1],
    ['160 GSM-7 characters', a(160), 'gsm7', 160, 1],
    ['161 GSM-7 characters', a(161), 'gsm7', 161, 2],
    ['306 GSM-7 characters', a(306), 'gsm7', 306, 2],
    ['307 GSM-7 characters', a(307), 'gsm7', 307, 3],
    ['the euro sign (extension table)', '€', 'gsm7', 2, 1],
    ['every extension character', '{}[]~^|\\€\f', 'gsm7', 20, 1],
    ['80 euro signs', '€'.repeat(80), 'gsm7', 160, 1],
    ['81 euro signs', '€'.repeat(81), 'gsm7', 162, 2],
    ['an escape never split across parts', a(152) + '€' + a(152), 'gsm7', 306, 3],
    ['é is in GSM-7', 'héllo', 'gsm7', 5, 1],
    ['GSM-7 letters beyond ASCII', 'ÄÖÑÜäöñüàèéùìòÇØøÅåÆæßÉΔΦΓΛΩΠΨΣΘΞ£¥§¿¡¤', 'gsm7', 39, 1],
    ['line breaks are GSM-7', 'a\nb\r\nc', 'gsm7', 6, 1],
    ['ç (only Ç is GSM-7)', 'ça', 'ucs2', 2, 1],
    ['a tab', 'a\tb', 'ucs2', 3, 1],
    ['a backtick', '`x`', 'ucs2', 3, 1],
    ['Cyrillic', 'Привет', 'ucs2', 6, 1],
    ['an emoji is two code units', '😀', 'ucs2', 2, 1],
    ['GSM-7 text with one emoji', 'hi 😀', 'ucs2', 5, 1],
    ['70 UCS-2 code units', zh(70), 'ucs2', 70, 1],
    ['71 UCS-2 code units', zh(71), 'ucs2', 71, 2],
    ['134 UCS-2 code units', zh(134), 'ucs2', 134, 2],
    ['135 UCS-2 code units', zh(135), 'ucs2', 135, 3],
    ['a surrogate pair never split across parts', zh(66) + '😀' + zh(66), 'ucs2', 134, 3],
  ])('%s', (_name, text, encoding, units, segments) => {
    expect(smsLength(text)).toEqual({ encoding, units, segments });
  });
});

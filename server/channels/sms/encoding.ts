// How an SMS text is encoded and how many parts it is sent in (3GPP TS 23.038 and 23.040). A text
// of only GSM-7 characters is sent in 7-bit septets, a character of the extension table taking two
// (an escape and the character); any other text is sent in UCS-2, counted in UTF-16 code units (a
// character outside the basic plane, an emoji say, takes two). One message holds 160 septets or 70
// code units; a longer text is split into parts of 153 septets or 67 code units (the rest of each
// part carries the concatenation header), and a part never splits a two-unit character.

/** The GSM 03.38 basic character set (the escape, 0x1B, is no character of its own). */
const GSM7_BASIC = new Set(
  [
    '@£$¥èéùìòÇ\nØø\rÅå',
    'Δ_ΦΓΛΩΠΨΣΘΞÆæßÉ',
    ' !"#¤%&\'()*+,-./',
    '0123456789:;<=>?',
    '¡ABCDEFGHIJKLMNO',
    'PQRSTUVWXYZÄÖÑÜ§',
    '¿abcdefghijklmno',
    'pqrstuvwxyzäöñüà',
  ].join(''),
);

/** The extension table: each is sent as the escape and a septet of its own. */
const GSM7_EXTENSION = new Set(['\f', '^', '{', '}', '\\', '[', '~', ']', '|', '€']);

export type SmsEncoding = 'gsm7' | 'ucs2';

export interface SmsLength {
  encoding: SmsEncoding;
  /** Septets (gsm7) or UTF-16 code units (ucs2). */
  units: number;
  /** The messages it is sent in; 0 for an empty text. */
  segments: number;
}

const LIMITS: Record<SmsEncoding, { single: number; part: number }> = {
  gsm7: { single: 160, part: 153 },
  ucs2: { single: 70, part: 67 },
};

/** The units of each character of the text in the encoding it needs. */
function characterUnits(text: string): { encoding: SmsEncoding; units: number[] } {
  const gsm: number[] = [];
  for (const char of text) {
    if (GSM7_BASIC.has(char)) gsm.push(1);
    else if (GSM7_EXTENSION.has(char)) gsm.push(2);
    else return { encoding: 'ucs2', units: Array.from(text, (c) => c.length) };
  }
  return { encoding: 'gsm7', units: gsm };
}

export function smsLength(text: string): SmsLength {
  const { encoding, units } = characterUnits(text);
  const total = units.reduce((sum, n) => sum + n, 0);
  const limit = LIMITS[encoding];
  if (total === 0) return { encoding, units: 0, segments: 0 };
  if (total <= limit.single) return { encoding, units: total, segments: 1 };
  let segments = 1;
  let used = 0;
  for (const n of units) {
    if (used + n > limit.part) {
      segments++;
      used = 0;
    }
    used += n;
  }
  return { encoding, units: total, segments };
}

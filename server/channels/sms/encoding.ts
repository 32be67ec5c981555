// Which SMS alphabet a text needs: GSM 03.38 (its basic set and the extension table), else UCS-2.

const GSM7 = new Set(
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?' +
    '¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà' +
    '^{}\\[~]|€\f',
);

export function isGsm7(text: string): boolean {
  for (const ch of text) if (!GSM7.has(ch)) return false;
  return true;
}

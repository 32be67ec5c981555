// Web push payload encryption (RFC 8291, aes128gcm content coding of RFC 8188): one record, under a
// key agreed between a new ECDH key pair of ours and the browser's, mixed with the subscription's
// auth secret. Each HMAC step is one HMAC call (every output fits one SHA-256 block), so a message
// costs its key agreement and little more: the key agreement is most of a web push's CPU.
import { createCipheriv, createECDH, createHmac, type ECDH } from 'node:crypto';
import { fillRandom } from '../../base/random-pool.ts';

/** The record size announced in the header: RFC 8291's usual 4096 (a push service need accept no more). */
const RECORD_SIZE = 4096;
/** AES-GCM's authentication tag, and the one delimiter octet that ends the last (here: only) record. */
const TAG_BYTES = 16;
const LAST_RECORD = Buffer.from([2]);

const KEY_INFO = Buffer.from('WebPush: info\0');
const CEK_INFO = Buffer.from('Content-Encoding: aes128gcm\0\x01');
const NONCE_INFO = Buffer.from('Content-Encoding: nonce\0\x01');
const ONE = Buffer.from([1]);

export interface WebPushKeys {
  /** The browser's P-256 public key, uncompressed, base64url. */
  p256dh: string;
  /** The subscription's auth secret, base64url (16 octets). */
  auth: string;
}

/**
 * The request body of a push message: salt, record size, our public key, and the one encrypted record.
 * Throws on keys a browser would not give (wrong lengths, a point off the curve). `fixed` sets the
 * salt and our key pair, for the RFC's test vector only: both must be new for every message.
 */
export function encryptWebPushPayload(
  keys: WebPushKeys,
  payload: string | Buffer,
  fixed?: { salt: Buffer; senderKey: ECDH },
): Buffer {
  if (typeof keys?.p256dh !== 'string' || typeof keys.auth !== 'string')
    throw new Error('the subscription has no p256dh key or auth secret');
  const uaPublic = Buffer.from(keys.p256dh, 'base64url');
  if (uaPublic.length !== 65) throw new Error('the subscription p256dh key is not 65 octets');
  const authSecret = Buffer.from(keys.auth, 'base64url');
  if (authSecret.length < 16) throw new Error('the subscription auth secret is shorter than 16 octets');
  const plaintext = typeof payload === 'string' ? Buffer.from(payload) : payload;

  let sender = fixed?.senderKey;
  if (!sender) {
    sender = createECDH('prime256v1');
    sender.generateKeys();
  }
  const asPublic = sender.getPublicKey();
  const ecdhSecret = sender.computeSecret(uaPublic);
  // The header starts with the salt: 16 new random octets for every message.
  const header = Buffer.alloc(21);
  if (fixed) fixed.salt.copy(header, 0);
  else fillRandom(header, 0, 16);
  const salt = header.subarray(0, 16);

  // RFC 8291 section 3.3: IKM = HKDF(salt = auth_secret, ikm = ecdh_secret, info = key_info, 32).
  const prkKey = hmac(authSecret, ecdhSecret);
  const ikm = hmac(prkKey, KEY_INFO, uaPublic, asPublic, ONE);
  // RFC 8188 section 2.2 and 2.3: the content key and the nonce (the first record's: sequence 0).
  const prk = hmac(salt, ikm);
  const cek = hmac(prk, CEK_INFO).subarray(0, 16);
  const nonce = hmac(prk, NONCE_INFO).subarray(0, 12);

  const recordSize = Math.max(RECORD_SIZE, plaintext.length + LAST_RECORD.length + TAG_BYTES);
  header.writeUInt32BE(recordSize, 16);
  header[20] = asPublic.length;
  const cipher = createCipheriv('aes-128-gcm', cek, nonce);
  return Buffer.concat([
    header,
    asPublic,
    cipher.update(plaintext),
    cipher.update(LAST_RECORD),
    cipher.final(),
    cipher.getAuthTag(),
  ]);
}

function hmac(key: Buffer, ...parts: Buffer[]): Buffer {
  const mac = createHmac('sha256', key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

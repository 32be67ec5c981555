// The key ring: AES-256-GCM envelope encryption for every secret Herald stores.
//
// Each secret gets its own random data key; the data key is wrapped by a ring key (the key-encryption
// key), and the envelope names that ring key's id. Both layers bind the row identity as additional
// authenticated data, so a ciphertext copied to another row fails to decrypt. Rotating re-wraps only
// the data keys. Ring keys live outside the database: in <dataDir>/keys.json (mode 0600) or in
// HERALD_ENCRYPTION_KEYS ("id:base64,id:base64", the first one active).
import { chmodSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'hv1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

export interface KeyFile {
  active: string;
  keys: Record<string, string>; // id -> base64 of 32 bytes
}

/** A ciphertext whose ring key is no longer present: the secret is unreadable, not corrupt. */
export class KeyUnavailableError extends Error {
  override name = 'KeyUnavailableError';
  readonly keyId: string;
  constructor(keyId: string) {
    super(`encryption key ${keyId} is not in the key ring`);
    this.keyId = keyId;
  }
}

/** Neither HERALD_ENCRYPTION_KEYS nor a key file: the key ring cannot load. */
export class NoKeyFileError extends Error {
  override name = 'NoKeyFileError';
  readonly path: string;
  constructor(path: string) {
    super(`no key file at ${path}: run 'herald init' first`);
    this.path = path;
  }
}

/** A ciphertext that fails authentication (tampered, or bound to another row). */
export class DecryptionError extends Error {
  override name = 'DecryptionError';
}

export function keyFilePath(dataDir: string): string {
  return join(dataDir, 'keys.json');
}

function seal(key: Buffer, plaintext: Buffer, aad: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return `${iv.toString('base64url')}:${body.toString('base64url')}`;
}

function open(key: Buffer, sealed: string, aad: string): Buffer {
  const [ivPart, bodyPart] = sealed.split(':');
  if (!ivPart || !bodyPart) throw new DecryptionError('malformed ciphertext');
  const iv = Buffer.from(ivPart, 'base64url');
  const body = Buffer.from(bodyPart, 'base64url');
  if (iv.length !== IV_BYTES || body.length < TAG_BYTES) throw new DecryptionError('malformed ciphertext');
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new DecryptionError('ciphertext failed authentication');
  }
}

export class KeyRing {
  #keys: Map<string, Buffer>;
  #activeKeyId: string;
  // Where the ring came from when it is a key file. A running server re-reads it when the file changed
  // on disk (one stat per encrypt/decrypt: it then encrypts under a key rotated in by another process,
  // and a retired key stops working everywhere) and, once, when it meets a key id it does not know.
  // Null for HERALD_ENCRYPTION_KEYS.
  readonly #dataDir: string | null;
  #fileStamp: string | null = null;
  readonly #triedReloadFor = new Set<string>();

  constructor(file: KeyFile, options: { dataDir?: string } = {}) {
    this.#dataDir = options.dataDir ?? null;
    this.#keys = parseKeys(file);
    this.#activeKeyId = file.active;
    if (this.#dataDir) this.#fileStamp = stampOf(this.#dataDir);
  }

  get activeKeyId(): string {
    return this.#activeKeyId;
  }

  /** True when the ring comes from the data directory's key file (rotate/retire may change it). */
  get fromKeyFile(): boolean {
    return this.#dataDir !== null;
  }

  /** Re-reads the key file (no-op for HERALD_ENCRYPTION_KEYS). */
  reload(): void {
    if (!this.#dataDir) return;
    const file = readKeyFile(this.#dataDir);
    if (!file) return;
    this.#keys = parseKeys(file);
    this.#activeKeyId = file.active;
    this.#fileStamp = stampOf(this.#dataDir);
    this.#triedReloadFor.clear();
  }

  /** The ring key for `keyId`, re-reading the key file once for an id it has not seen. */
  #ringKey(keyId: string): Buffer {
    let key = this.#keys.get(keyId);
    if (!key && this.#dataDir && !this.#triedReloadFor.has(keyId)) {
      this.reload();
      this.#triedReloadFor.add(keyId);
      key = this.#keys.get(keyId);
    }
    if (!key) throw new KeyUnavailableError(keyId);
    return key;
  }

  #refreshIfChanged(): void {
    if (!this.#dataDir) return;
    const stamp = stampOf(this.#dataDir);
    if (stamp === this.#fileStamp) return;
    try {
      this.reload();
    } catch {
      // A key file edited into an invalid state must not break every secret: keep the keys in
      // memory until the file changes again (herald status reports the broken file).
      this.#fileStamp = stamp;
    }
  }

  keyIds(): string[] {
    return [...this.#keys.keys()];
  }

  has(keyId: string): boolean {
    return this.#keys.has(keyId);
  }

  /** Encrypts `plaintext` for the row named by `aad` (e.g. "push_transports/<tenant>/apns"). */
  encrypt(plaintext: string, aad: string): string {
    this.#refreshIfChanged();
    const dataKey = randomBytes(KEY_BYTES);
    const wrapped = seal(this.#keys.get(this.activeKeyId)!, dataKey, aad);
    const body = seal(dataKey, Buffer.from(plaintext, 'utf8'), aad);
    return `${VERSION}.${this.activeKeyId}.${wrapped}.${body}`;
  }

  decrypt(envelope: string, aad: string): string {
    this.#refreshIfChanged();
    const { keyId, wrapped, body } = parseEnvelope(envelope);
    const dataKey = open(this.#ringKey(keyId), wrapped, aad);
    return open(dataKey, body, aad).toString('utf8');
  }

  /** Re-wraps the data key under the active ring key; the secret itself is not re-encrypted. */
  rewrap(envelope: string, aad: string): string {
    const { keyId, wrapped, body } = parseEnvelope(envelope);
    if (keyId === this.activeKeyId) return envelope;
    const dataKey = open(this.#ringKey(keyId), wrapped, aad);
    return `${VERSION}.${this.activeKeyId}.${seal(this.#keys.get(this.activeKeyId)!, dataKey, aad)}.${body}`;
  }
}

function parseKeys(file: KeyFile): Map<string, Buffer> {
  const keys = new Map<string, Buffer>();
  for (const [id, b64] of Object.entries(file.keys)) {
    const key = Buffer.from(b64, 'base64');
    if (key.length !== KEY_BYTES) throw new Error(`encryption key ${id} must be ${KEY_BYTES} bytes`);
    if (!/^[A-Za-z0-9_-]{1,32}$/.test(id)) throw new Error(`encryption key id ${JSON.stringify(id)} is invalid`);
    keys.set(id, key);
  }
  if (!keys.has(file.active)) throw new Error(`active encryption key ${file.active} is not in the key ring`);
  return keys;
}

function stampOf(dataDir: string): string | null {
  try {
    const st = statSync(keyFilePath(dataDir));
    return `${st.mtimeMs}:${st.size}:${st.ino}`;
  } catch {
    return null;
  }
}

export function envelopeKeyId(envelope: string): string {
  return parseEnvelope(envelope).keyId;
}

function parseEnvelope(envelope: string): { keyId: string; wrapped: string; body: string } {
  const parts = envelope.split('.');
  if (parts.length !== 4 || parts[0] !== VERSION) throw new DecryptionError('not a Herald ciphertext');
  return { keyId: parts[1]!, wrapped: parts[2]!, body: parts[3]! };
}

export function generateKey(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

/** Parses HERALD_ENCRYPTION_KEYS: "id:base64,id:base64"; the first key is the active one. */
export function parseKeyList(value: string): KeyFile {
  const keys: Record<string, string> = {};
  let active = '';
  for (const entry of value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const at = entry.indexOf(':');
    if (at <= 0) throw new Error('HERALD_ENCRYPTION_KEYS entries must look like id:base64key');
    const id = entry.slice(0, at);
    keys[id] = entry.slice(at + 1);
    active ||= id;
  }
  if (!active) throw new Error('HERALD_ENCRYPTION_KEYS holds no key');
  return { active, keys };
}

export function readKeyFile(dataDir: string): KeyFile | null {
  const path = keyFilePath(dataDir);
  if (!existsSync(path)) return null;
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as KeyFile;
  if (!parsed || typeof parsed.active !== 'string' || typeof parsed.keys !== 'object')
    throw new Error(`${path} is not a Herald key file`);
  return parsed;
}

/** Writes the key file atomically with owner-only permissions. */
export function writeKeyFile(dataDir: string, file: KeyFile): void {
  const path = keyFilePath(dataDir);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(file, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/**
 * The install's key ring: HERALD_ENCRYPTION_KEYS when set, else the data directory's key file,
 * created with a fresh key when `create` is true (herald init, first start).
 */
export function loadKeyRing(options: {
  dataDir: string;
  encryptionKeys?: string | undefined;
  create?: boolean;
}): KeyRing {
  if (options.encryptionKeys) return new KeyRing(parseKeyList(options.encryptionKeys));
  let file = readKeyFile(options.dataDir);
  if (!file) {
    if (!options.create) throw new NoKeyFileError(keyFilePath(options.dataDir));
    const id = `k${Date.now().toString(36)}`;
    file = { active: id, keys: { [id]: generateKey() } };
    writeKeyFile(options.dataDir, file);
  }
  return new KeyRing(file, { dataDir: options.dataDir });
}

/** A secret that cannot be decrypted because its key is gone (or it was tampered with). */
export function isUnreadable(error: unknown): boolean {
  return error instanceof KeyUnavailableError || error instanceof DecryptionError;
}

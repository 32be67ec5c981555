// Compact JWS signing for provider credentials: ES256 (APNs token auth) and RS256 (Google service
// account assertions), with node:crypto. ES256 signatures use the raw r||s (IEEE P1363) encoding JWS requires.
import { createHash, createPrivateKey, sign, type KeyObject } from 'node:crypto';

const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

export function signJwt(
  alg: 'ES256' | 'RS256',
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  key: KeyObject,
): string {
  const input = `${b64url(JSON.stringify({ alg, typ: 'JWT', ...header }))}.${b64url(JSON.stringify(claims))}`;
  const signature = sign('sha256', Buffer.from(input), alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key);
  return `${input}.${b64url(signature)}`;
}

/** Parses a PEM private key, checking it is of the expected type; null when it is not. */
export function parsePrivateKey(pem: string, type: 'ec-p256' | 'rsa'): KeyObject | null {
  try {
    const key = createPrivateKey({ key: pem, format: 'pem' });
    if (type === 'rsa') return key.asymmetricKeyType === 'rsa' ? key : null;
    return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1' ? key : null;
  } catch {
    return null;
  }
}

/** A cache key for a credential that does not reveal it. */
function fingerprint(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 32);
}

const fingerprints = new WeakMap<object, string>();

/**
 * The fingerprint of a credentials object's `parts`, computed once per object: a run looks a tenant's
 * transport up once per batch, and every message of the batch would hash the same private key again.
 */
export function credentialsFingerprint(credentials: object, parts: () => string[]): string {
  let found = fingerprints.get(credentials);
  if (found === undefined) fingerprints.set(credentials, (found = fingerprint(...parts())));
  return found;
}

// An HTTP/2 TLS server speaking the APNs provider API: POST /3/device/<token> with a bearer ES256 JWT.
// It verifies the JWT against the public key of the team's .p8 key (kid, iss, iat), the apns-topic and
// push type, and answers like Apple: 200 with apns-id, 410 Unregistered, 400 BadDeviceToken, 403 for a bad token.
// A connection verifies each distinct JWT once, as a provider's server can: a client reuses its token
// for most of an hour, and an ES256 verification per request would make this peer, not the client
// under test, the busiest process of a benchmark.
import {
  createSecureServer,
  constants,
  type Http2SecureServer,
  type Http2Session,
  type ServerHttp2Session,
} from 'node:http2';
import { createPublicKey, randomUUID, verify, type KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { testCertificate } from './tls.ts';

export interface ApnsNotification {
  token: string;
  topic: string;
  payload: { aps: { alert: { title: string; body: string } }; data?: Record<string, unknown> };
  jwt: string;
}

export interface ApnsPeer {
  url: string;
  received: ApnsNotification[];
  /** Tokens answered 410 Unregistered. */
  unregistered: Set<string>;
  /** Number of HTTP/2 sessions clients opened (Herald should reuse one). */
  sessions: number;
  close(): Promise<void>;
}

function verifyJwt(jwt: string, publicKey: KeyObject, expect: { teamId: string; keyId: string }): string | null {
  const [h, p, s] = jwt.split('.');
  if (!h || !p || !s) return 'malformed';
  const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg?: string; kid?: string };
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as { iss?: string; iat?: number };
  if (header.alg !== 'ES256' || header.kid !== expect.keyId) return 'InvalidProviderToken';
  if (claims.iss !== expect.teamId || typeof claims.iat !== 'number') return 'InvalidProviderToken';
  const ok = verify(
    'sha256',
    Buffer.from(`${h}.${p}`),
    { key: publicKey, dsaEncoding: 'ieee-p1363' },
    Buffer.from(s, 'base64url'),
  );
  return ok ? null : 'InvalidProviderToken';
}

export async function startApnsPeer(options: {
  privateKeyPem: string;
  teamId: string;
  keyId: string;
  bundleId: string;
}): Promise<ApnsPeer> {
  const { cert, key } = testCertificate();
  const publicKey = createPublicKey(options.privateKeyPem);
  const peer: ApnsPeer = { url: '', received: [], unregistered: new Set(), sessions: 0, close: async () => undefined };
  const server: Http2SecureServer = createSecureServer({ cert, key });
  server.on('session', () => peer.sessions++);
  /** Each session's verdicts on the JWTs it has seen (null: valid). */
  const verdicts = new WeakMap<Http2Session, Map<string, string | null>>();
  server.on('stream', (stream, headers) => {
    let seen = verdicts.get(stream.session!);
    if (!seen) verdicts.set(stream.session!, (seen = new Map()));
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const answer = (status: number, reason?: string) => {
        stream.respond({
          [constants.HTTP2_HEADER_STATUS]: status,
          'apns-id': randomUUID(),
          'content-type': 'application/json',
        });
        stream.end(reason ? JSON.stringify({ reason }) : undefined);
      };
      const path = String(headers[constants.HTTP2_HEADER_PATH]);
      const match = /^\/3\/device\/([^/]+)$/.exec(path);
      if (headers[constants.HTTP2_HEADER_METHOD] !== 'POST' || !match) return answer(404, 'BadPath');
      const auth = String(headers.authorization ?? '');
      if (!auth.startsWith('bearer ')) return answer(403, 'MissingProviderToken');
      const jwt = auth.slice('bearer '.length);
      let problem = seen.get(jwt);
      if (problem === undefined) seen.set(jwt, (problem = verifyJwt(jwt, publicKey, options)));
      if (problem) return answer(403, problem);
      if (headers['apns-topic'] !== options.bundleId) return answer(400, 'DeviceTokenNotForTopic');
      if (headers['apns-push-type'] !== 'alert') return answer(400, 'InvalidPushType');
      const token = match[1]!;
      if (peer.unregistered.has(token)) return answer(410, 'Unregistered');
      if (!/^[0-9a-f]{64}$/.test(token)) return answer(400, 'BadDeviceToken');
      peer.received.push({
        token,
        topic: String(headers['apns-topic']),
        payload: JSON.parse(Buffer.concat(chunks).toString()),
        jwt,
      });
      answer(200);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  peer.url = `https://localhost:${(server.address() as AddressInfo).port}`;
  const sessions = new Set<ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  peer.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sessions) s.destroy();
      server.close(() => resolve());
    });
  return peer;
}

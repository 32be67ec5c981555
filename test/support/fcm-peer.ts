// An HTTP server speaking FCM HTTP v1: the OAuth token endpoint verifies the service account's RS256
// assertion (issuer, audience, scope, signature) and issues access tokens; the send endpoint checks the
// bearer and project, and answers like FCM (name on success, 404 UNREGISTERED for dead tokens). Plain
// HTTP/1.1 by default; with `tls`, https offering HTTP/2 and HTTP/1.1 (ALPN), as FCM does.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createSecureServer, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import { createPublicKey, randomBytes, verify } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { testCertificate } from './tls.ts';
import { trackConnections } from './connections.ts';

export interface FcmPeer {
  url: string;
  tokenUrl: string;
  tokenExchanges: number;
  received: Array<{ token: string; notification: { title: string; body: string }; data: Record<string, string> }>;
  /** Connections accepted so far, and the HTTP versions requests came in (e.g. '1.1', '2.0'). */
  readonly connections: number;
  httpVersions: Set<string>;
  deadTokens: Set<string>;
  /** Forgets every access token issued so far: the next send with one answers 401, as for a revoked token. */
  revokeAccessTokens(): void;
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage | Http2ServerRequest) =>
  new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString()));
  });

export async function startFcmPeer(options: {
  privateKeyPem: string;
  clientEmail: string;
  projectId: string;
  tls?: boolean;
}): Promise<FcmPeer> {
  const publicKey = createPublicKey(options.privateKeyPem);
  const issued = new Set<string>();
  const handle = async (req: IncomingMessage | Http2ServerRequest, res: ServerResponse | Http2ServerResponse) => {
    peer.httpVersions.add(req.httpVersion);
    const body = await readBody(req);
    const json = (status: number, value: unknown) => {
      (res as ServerResponse).writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'POST' && req.url === '/token') {
      const form = new URLSearchParams(body);
      const assertion = form.get('assertion') ?? '';
      const [h, p, s] = assertion.split('.');
      if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer' || !h || !p || !s)
        return json(400, { error: 'invalid_grant' });
      const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg?: string };
      const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as {
        iss?: string;
        aud?: string;
        scope?: string;
        exp?: number;
        iat?: number;
      };
      const signed = verify('sha256', Buffer.from(`${h}.${p}`), publicKey, Buffer.from(s, 'base64url'));
      if (header.alg !== 'RS256' || !signed || claims.iss !== options.clientEmail || claims.aud !== peer.tokenUrl)
        return json(400, { error: 'invalid_grant' });
      if (
        claims.scope !== 'https://www.googleapis.com/auth/firebase.messaging' ||
        !claims.exp ||
        !claims.iat ||
        claims.exp - claims.iat > 3600
      ) {
        return json(400, { error: 'invalid_scope' });
      }
      peer.tokenExchanges++;
      const token = `ya29.${randomBytes(16).toString('hex')}`;
      issued.add(token);
      return json(200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
    }
    const send = /^\/v1\/projects\/([^/]+)\/messages:send$/.exec(req.url ?? '');
    if (req.method === 'POST' && send) {
      const bearer = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      if (!issued.has(bearer)) return json(401, { error: { code: 401, status: 'UNAUTHENTICATED' } });
      if (send[1] !== options.projectId) return json(403, { error: { code: 403, status: 'PERMISSION_DENIED' } });
      const { message } = JSON.parse(body) as { message: FcmPeer['received'][number] };
      if (peer.deadTokens.has(message.token)) {
        return json(404, {
          error: {
            code: 404,
            status: 'NOT_FOUND',
            details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' }],
          },
        });
      }
      peer.received.push(message);
      return json(200, { name: `projects/${options.projectId}/messages/${randomBytes(8).toString('hex')}` });
    }
    json(404, { error: 'not found' });
  };
  const server = options.tls
    ? createSecureServer({ cert: testCertificate().cert, key: testCertificate().key, allowHTTP1: true }, handle)
    : createServer(handle);
  const tracked = trackConnections(server);
  const peer: FcmPeer = {
    url: '',
    tokenUrl: '',
    tokenExchanges: 0,
    received: [],
    get connections() {
      return tracked.accepted;
    },
    httpVersions: new Set(),
    deadTokens: new Set(),
    revokeAccessTokens: () => issued.clear(),
    close: async () => undefined,
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  peer.url = `${options.tls ? 'https://localhost' : 'http://127.0.0.1'}:${(server.address() as AddressInfo).port}`;
  peer.tokenUrl = `${peer.url}/token`;
  peer.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      tracked.destroyAll();
    });
  return peer;
}

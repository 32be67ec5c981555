// A generic HTTP endpoint for Herald's `http` SMS provider and its `http` channel: keeps every request,
// parses JSON bodies, answers 200 JSON unless told otherwise, and checks Standard Webhooks signatures
// (webhook-id, webhook-timestamp, webhook-signature) with the standardwebhooks package.
import { Webhook } from 'standardwebhooks';
import { parseJson, pathOf, startPeerServer, type PeerControls, type RawRequest, type Reply } from './base.ts';

export interface GatewayRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
  body: string;
  at: number;
}

export interface HttpGatewayPeer extends PeerControls {
  /** Every request but the faulted ones, with its JSON body parsed. */
  received: GatewayRequest[];
  /** How the peer answers from now on (default 200 {"ok": true}). */
  respondWith(reply: Reply | ((request: RawRequest) => Reply)): void;
  /** Verifies a request's Standard Webhooks signature and returns the parsed payload; throws when wrong. */
  verify(request: Pick<RawRequest, 'headers' | 'body'>, secret?: string): unknown;
}

/** Verifies Standard Webhooks headers over a raw body with `secret` (whsec_…); throws when wrong. */
export function verifyStandardWebhook(secret: string, request: Pick<RawRequest, 'headers' | 'body'>): unknown {
  return new Webhook(secret).verify(request.body, {
    'webhook-id': request.headers['webhook-id'] ?? '',
    'webhook-timestamp': request.headers['webhook-timestamp'] ?? '',
    'webhook-signature': request.headers['webhook-signature'] ?? '',
  });
}

export async function startHttpGatewayPeer(options: { secret?: string } = {}): Promise<HttpGatewayPeer> {
  const received: GatewayRequest[] = [];
  let responder: Reply | ((request: RawRequest) => Reply) = { status: 200, body: { ok: true } };

  const handle = (request: RawRequest): Reply => {
    received.push({
      method: request.method,
      path: pathOf(request),
      headers: request.headers,
      json: parseJson(request.body),
      body: request.body,
      at: request.at,
    });
    return typeof responder === 'function' ? responder(request) : responder;
  };

  const controls = await startPeerServer(handle);
  return Object.assign(controls, {
    received,
    respondWith(reply: Reply | ((request: RawRequest) => Reply)) {
      responder = reply;
    },
    verify(request: Pick<RawRequest, 'headers' | 'body'>, secret = options.secret) {
      if (!secret) throw new Error('http gateway peer: no secret to verify with');
      return verifyStandardWebhook(secret, request);
    },
  });
}

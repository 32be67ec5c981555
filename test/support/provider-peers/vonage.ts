// The Vonage (Nexmo) legacy SMS API: POST /sms/json with api_key and api_secret (or a `sig` made with the
// signature secret) in a form or JSON body. Like Vonage it answers 200 even for errors, with a status per
// message part ("0" sent, "1" throttled, "2" missing parameters, ...); HTTP errors come only from
// failNext. It also posts Vonage's delivery receipts and inbound messages back to Herald, signed when the
// peer has a signature secret.
import { createHash, createHmac, randomUUID } from 'node:crypto';
import {
  asObject,
  isJson,
  parseForm,
  parseJson,
  pathOf,
  postForm,
  postJson,
  queryOf,
  randomHex,
  smsSegments,
  startPeerServer,
  type PeerControls,
  type RawRequest,
  type Reply,
} from './base.ts';

export type VonageSignatureMethod = 'md5hash' | 'md5' | 'sha1' | 'sha256' | 'sha512';

export interface VonageMessage {
  /** The first part's id; `partIds` has every part's, in order (a long text is sent in several). */
  messageId: string;
  partIds: string[];
  to: string;
  from: string;
  text: string;
  type?: string;
  callback?: string;
  clientRef?: string;
  /** True when it was authenticated with `sig` rather than api_secret. */
  signed: boolean;
  parts: number;
  at: number;
}

export interface VonagePeer extends PeerControls {
  apiKey: string;
  apiSecret: string;
  signatureSecret?: string;
  signatureMethod: VonageSignatureMethod;
  received: VonageMessage[];
  /** Numbers answered with status "3" (Invalid Parameters), beside anything that is not a number. */
  invalidNumbers: Set<string>;
  /** The next `count` sends are answered 200 with this Vonage status ("1" throttled, "9" quota, ...). */
  statusNext(count: number, status: VonageStatus): void;
  /** The next message of several parts has its last part refused with this status (the others accepted). */
  refuseLastPartNext(status: VonageStatus): void;
  /** Posts a delivery receipt (DLR) for a sent message, as Vonage calls the delivery receipt webhook. */
  sendDeliveryReceipt(
    url: string,
    receipt: {
      messageId: string;
      status: 'delivered' | 'failed' | 'rejected' | 'expired' | 'accepted' | 'buffered';
      errCode?: string;
      format?: 'json' | 'form';
      /** The send's client-ref, for a message this peer did not take itself (another account's peer signs it). */
      clientRef?: string;
    },
  ): Promise<Response>;
  /** Posts an inbound message, as Vonage calls the inbound SMS webhook. */
  sendInbound(
    url: string,
    message: { msisdn: string; to: string; text: string; format?: 'json' | 'form' },
  ): Promise<Response>;
}

export type VonageStatus = '1' | '2' | '3' | '4' | '5' | '6' | '7' | '8' | '9' | '14' | '15';

const ERROR_TEXT: Record<VonageStatus, string> = {
  '1': 'Throughput Rate Exceeded - please wait [ 1000 ] and retry',
  '2': 'Missing Parameters',
  '3': 'Invalid Parameters',
  '4': 'Bad Credentials',
  '5': 'Internal Error',
  '6': 'Invalid Message',
  '7': 'Number Barred',
  '8': 'Partner Account Barred',
  '9': 'Partner Quota Violation',
  '14': 'Invalid Signature',
  '15': 'Illegal Sender Address - rejected',
};

/**
 * Vonage's request signature: the parameters but `sig`, sorted by name, as "&name=value" with every "&"
 * and "=" in a value replaced by "_". md5hash is the lower-case MD5 of that string followed by the
 * secret; the HMAC methods are the upper-case hex HMAC of the string keyed by the secret.
 */
export function vonageSignature(
  params: Record<string, string>,
  secret: string,
  method: VonageSignatureMethod = 'md5hash',
): string {
  let query = '';
  for (const name of Object.keys(params).sort()) {
    if (name === 'sig') continue;
    query += `&${name}=${params[name]!.replace(/[&=]/g, '_')}`;
  }
  if (method === 'md5hash')
    return createHash('md5')
      .update(query + secret)
      .digest('hex');
  return createHmac(method, secret).update(query).digest('hex').toUpperCase();
}

function vonageTimestamp(date = new Date()): string {
  return date.toISOString().slice(0, 19).replace('T', ' ');
}

export async function startVonagePeer(
  options: {
    apiKey?: string;
    apiSecret?: string;
    signatureSecret?: string;
    signatureMethod?: VonageSignatureMethod;
    invalidNumbers?: Iterable<string>;
  } = {},
): Promise<VonagePeer> {
  const apiKey = options.apiKey ?? randomHex(8);
  const apiSecret = options.apiSecret ?? randomHex(16);
  const signatureMethod = options.signatureMethod ?? 'md5hash';
  const received: VonageMessage[] = [];
  const invalidNumbers = new Set(options.invalidNumbers ?? []);
  const statuses: VonageStatus[] = [];
  let lastPartStatus: VonageStatus | null = null;

  const failed = (status: VonageStatus, text = ERROR_TEXT[status], to?: string): Reply => ({
    status: 200,
    body: {
      'message-count': '1',
      messages: [{ ...(to ? { to } : {}), status, 'error-text': text }],
    },
  });

  const handle = (request: RawRequest): Reply => {
    if (pathOf(request) !== '/sms/json') return { status: 404, body: { 'error-code': '404' } };
    if (request.method !== 'POST' && request.method !== 'GET') return { status: 405, body: '' };
    const params = readParams(request);
    if (!params.api_key) return failed('2', 'Missing api_key');
    const signed = params.sig !== undefined;
    if (!signed && !params.api_secret) return failed('2', 'Missing api_secret');
    if (params.api_key !== apiKey || (!signed && params.api_secret !== apiSecret)) return failed('4');
    if (signed) {
      const expected = options.signatureSecret
        ? vonageSignature(params, options.signatureSecret, signatureMethod)
        : undefined;
      if (!expected || expected.toLowerCase() !== params.sig!.toLowerCase()) return failed('14');
    }
    if (!params.from) return failed('2', 'Missing from param');
    if (!params.to) return failed('2', 'Missing to param');
    if (!params.text) return failed('2', 'Missing text param', params.to);
    const to = params.to.replace(/^\+/, '');
    if (!/^[1-9]\d{6,14}$/.test(to) || invalidNumbers.has(params.to) || invalidNumbers.has(to)) {
      return failed('3', 'Invalid to address', to);
    }
    const queued = statuses.shift();
    if (queued) return failed(queued, ERROR_TEXT[queued], to);
    const parts = smsSegments(params.text).segments;
    const messageIds = Array.from({ length: parts }, () => randomUUID());
    const refusedLast = parts > 1 ? lastPartStatus : null;
    if (refusedLast) lastPartStatus = null;
    received.push({
      messageId: messageIds[0]!,
      partIds: refusedLast ? messageIds.slice(0, -1) : messageIds,
      to,
      from: params.from,
      text: params.text,
      ...(params.type ? { type: params.type } : {}),
      ...(params.callback ? { callback: params.callback } : {}),
      ...(params['client-ref'] ? { clientRef: params['client-ref'] } : {}),
      signed,
      parts,
      at: Date.now(),
    });
    return {
      status: 200,
      body: {
        'message-count': String(parts),
        messages: messageIds.map((id, i) => ({
          to,
          ...(refusedLast && i === parts - 1
            ? { status: refusedLast, 'error-text': ERROR_TEXT[refusedLast] }
            : { 'message-id': id, status: '0' }),
          'remaining-balance': '15.53590000',
          'message-price': '0.03330000',
          network: '26201',
          ...(params['client-ref'] ? { 'client-ref': params['client-ref'] } : {}),
        })),
      },
    };
  };

  const controls = await startPeerServer(handle);
  const deliver = (url: string, fields: Record<string, string>, format: 'json' | 'form') => {
    const body = { ...fields };
    if (options.signatureSecret) {
      body.timestamp = String(Math.floor(Date.now() / 1000));
      body.sig = vonageSignature(body, options.signatureSecret, signatureMethod);
    }
    return format === 'json' ? postJson(url, body) : postForm(url, body);
  };

  return Object.assign(controls, {
    apiKey,
    apiSecret,
    ...(options.signatureSecret ? { signatureSecret: options.signatureSecret } : {}),
    signatureMethod,
    received,
    invalidNumbers,
    refuseLastPartNext(status: VonageStatus) {
      lastPartStatus = status;
    },
    statusNext(count: number, status: VonageStatus) {
      for (let i = 0; i < count; i++) statuses.push(status);
    },
    sendDeliveryReceipt(
      url: string,
      receipt: { messageId: string; status: string; errCode?: string; format?: 'json' | 'form'; clientRef?: string },
    ) {
      const message = received.find((m) => m.partIds.includes(receipt.messageId));
      const now = new Date();
      const scts = vonageTimestamp(now).replace(/[- :]/g, '').slice(2, 12);
      const errCode = receipt.errCode ?? (receipt.status === 'delivered' ? '0' : '1');
      return deliver(
        url,
        {
          msisdn: message?.to ?? '447700900000',
          to: message?.from ?? 'Herald',
          'network-code': '26201',
          messageId: receipt.messageId,
          price: '0.03330000',
          status: receipt.status,
          scts,
          'err-code': errCode,
          'api-key': apiKey,
          'message-timestamp': vonageTimestamp(now),
          ...((receipt.clientRef ?? message?.clientRef)
            ? { 'client-ref': (receipt.clientRef ?? message?.clientRef)! }
            : {}),
        },
        receipt.format ?? 'json',
      );
    },
    sendInbound(url: string, message: { msisdn: string; to: string; text: string; format?: 'json' | 'form' }) {
      return deliver(
        url,
        {
          msisdn: message.msisdn.replace(/^\+/, ''),
          to: message.to.replace(/^\+/, ''),
          messageId: randomHex(16).toUpperCase(),
          text: message.text,
          type: smsSegments(message.text).encoding === 'gsm7' ? 'text' : 'unicode',
          keyword: (message.text.trim().split(/\s+/)[0] ?? '').toUpperCase(),
          'api-key': apiKey,
          'message-timestamp': vonageTimestamp(),
        },
        message.format ?? 'json',
      );
    },
  });
}

/** Vonage reads parameters from the query string and from a form or JSON body alike. */
function readParams(request: RawRequest): Record<string, string> {
  const params: Record<string, string> = Object.fromEntries(queryOf(request));
  const body = isJson(request) ? asObject(parseJson(request.body)) : parseForm(request.body);
  for (const [name, value] of Object.entries(body ?? {})) {
    if (value !== undefined && value !== null) params[name] = String(value);
  }
  return params;
}

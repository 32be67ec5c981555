// A Twilio Programmable Messaging API: POST /2010-04-01/Accounts/{AccountSid}/Messages.json with HTTP
// Basic auth and a form body, answered as Twilio does (201 message resource, or Twilio's error JSON with
// its error codes), and Twilio's signed callbacks back to Herald: status callbacks and inbound messages
// carrying X-Twilio-Signature.
import { createHmac } from 'node:crypto';
import {
  E164,
  isForm,
  parseForm,
  pathOf,
  postForm,
  randomHex,
  smsSegments,
  startPeerServer,
  type PeerControls,
  type RawRequest,
  type Reply,
} from './base.ts';

export interface TwilioMessage {
  sid: string;
  accountSid: string;
  to: string;
  from?: string;
  messagingServiceSid?: string;
  body: string;
  statusCallback?: string;
  numSegments: number;
  at: number;
}

export type TwilioFinalStatus = 'delivered' | 'failed' | 'undelivered';

export interface TwilioPeer extends PeerControls {
  accountSid: string;
  authToken: string;
  received: TwilioMessage[];
  /** Numbers answered with 21211 (invalid 'To'), beside anything not E.164. */
  invalidNumbers: Set<string>;
  /** Numbers that replied STOP: answered with 21610. */
  unsubscribed: Set<string>;
  /** The next `count` requests get Twilio's 429 (error 20429). */
  rateLimitNext(count: number): void;
  /**
   * Runs `hook` on each accepted message before its answer goes out (null: no more), as when Twilio's
   * status callback overtakes its answer to the send.
   */
  beforeAnswering(hook: ((message: TwilioMessage) => Promise<unknown>) | null): void;
  /** POSTs a signed status callback for a sent message to its StatusCallback (or `opts.url`). */
  sendStatusCallback(
    sid: string,
    status: TwilioFinalStatus | 'sent',
    authToken?: string,
    opts?: { errorCode?: string; url?: string },
  ): Promise<Response>;
  /** POSTs a signed inbound message, as Twilio calls a number's messaging webhook. */
  sendInbound(
    webhookUrl: string,
    message: { From: string; To: string; Body: string },
    authToken?: string,
  ): Promise<Response>;
}

/**
 * Twilio's request signature: base64 HMAC-SHA1, keyed with the auth token, over the full URL followed by
 * every POST parameter's name and value, sorted by name (values of a repeated name sorted too).
 */
export function twilioSignature(
  authToken: string,
  url: string,
  params: Record<string, string | string[]> = {},
): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name]!;
    for (const v of Array.isArray(value) ? [...value].sort() : [value]) data += name + v;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

const MORE_INFO = 'https://www.twilio.com/docs/errors/';

function twilioError(status: number, code: number, message: string): Reply {
  return { status, body: { code, message, more_info: `${MORE_INFO}${code}`, status } };
}

const DEFAULT_ERROR_CODES: Record<TwilioFinalStatus, string | undefined> = {
  delivered: undefined,
  failed: '30008',
  undelivered: '30003',
};

export async function startTwilioPeer(
  options: { accountSid?: string; authToken?: string; invalidNumbers?: Iterable<string> } = {},
): Promise<TwilioPeer> {
  const accountSid = options.accountSid ?? `AC${randomHex(32)}`;
  const authToken = options.authToken ?? randomHex(32);
  const received: TwilioMessage[] = [];
  const invalidNumbers = new Set(options.invalidNumbers ?? []);
  const unsubscribed = new Set<string>();
  let beforeAnswer: ((message: TwilioMessage) => Promise<unknown>) | null = null;

  const handle = async (request: RawRequest): Promise<Reply> => {
    const match = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(pathOf(request));
    if (!match) {
      return twilioError(404, 20404, `The requested resource ${pathOf(request)} was not found`);
    }
    if (request.method !== 'POST') return twilioError(405, 20004, 'Method not allowed');
    if (!authorized(request, match[1]!, accountSid, authToken)) {
      return {
        ...twilioError(401, 20003, 'Authenticate'),
        headers: { 'www-authenticate': 'Basic realm="Twilio API"' },
      };
    }
    const form = isForm(request) ? parseForm(request.body) : {};
    const to = form.To;
    if (!to) return twilioError(400, 21604, "A 'To' phone number is required.");
    if (!E164.test(to) || invalidNumbers.has(to)) {
      return twilioError(400, 21211, `Invalid 'To' Phone Number: ${to}`);
    }
    if (!form.From && !form.MessagingServiceSid) {
      return twilioError(400, 21603, "A 'From' phone number is required.");
    }
    if (form.MessagingServiceSid && !/^MG[0-9a-f]{32}$/.test(form.MessagingServiceSid)) {
      return twilioError(400, 21701, 'The Messaging Service Sid is invalid.');
    }
    const body = form.Body ?? '';
    if (!body) return twilioError(400, 21602, 'Message body is required.');
    if (body.length > 1600) {
      return twilioError(400, 21617, 'The concatenated message body exceeds the 1600 character limit.');
    }
    if (unsubscribed.has(to)) {
      return twilioError(400, 21610, 'Attempt to send to unsubscribed recipient');
    }
    const message: TwilioMessage = {
      sid: `SM${randomHex(32)}`,
      accountSid,
      to,
      ...(form.From ? { from: form.From } : {}),
      ...(form.MessagingServiceSid ? { messagingServiceSid: form.MessagingServiceSid } : {}),
      body,
      ...(form.StatusCallback ? { statusCallback: form.StatusCallback } : {}),
      numSegments: smsSegments(body).segments,
      at: Date.now(),
    };
    received.push(message);
    if (beforeAnswer) await beforeAnswer(message);
    const now = new Date().toUTCString().replace('GMT', '+0000');
    return {
      status: 201,
      body: {
        account_sid: accountSid,
        api_version: '2010-04-01',
        body,
        date_created: now,
        date_sent: null,
        date_updated: now,
        direction: 'outbound-api',
        error_code: null,
        error_message: null,
        from: message.from ?? null,
        messaging_service_sid: message.messagingServiceSid ?? null,
        num_media: '0',
        num_segments: String(message.numSegments),
        price: null,
        price_unit: 'USD',
        sid: message.sid,
        // With only a Messaging Service, Twilio picks the sender later and says "accepted".
        status: message.from ? 'queued' : 'accepted',
        subresource_uris: { media: `/2010-04-01/Accounts/${accountSid}/Messages/${message.sid}/Media.json` },
        to,
        uri: `/2010-04-01/Accounts/${accountSid}/Messages/${message.sid}.json`,
      },
    };
  };

  const controls = await startPeerServer(handle);
  const signedPost = (url: string, params: Record<string, string>, token: string) =>
    postForm(url, params, { 'x-twilio-signature': twilioSignature(token, url, params) });

  return Object.assign(controls, {
    accountSid,
    authToken,
    received,
    invalidNumbers,
    unsubscribed,
    beforeAnswering(hook: ((message: TwilioMessage) => Promise<unknown>) | null) {
      beforeAnswer = hook;
    },
    rateLimitNext(count: number) {
      controls.failNext(count, twilioError(429, 20429, 'Too Many Requests'));
    },
    sendStatusCallback(
      sid: string,
      status: TwilioFinalStatus | 'sent',
      token: string = authToken,
      opts: { errorCode?: string; url?: string } = {},
    ) {
      const message = received.find((m) => m.sid === sid);
      if (!message) throw new Error(`twilio peer: no message ${sid}`);
      const url = opts.url ?? message.statusCallback;
      if (!url) throw new Error(`twilio peer: message ${sid} has no StatusCallback`);
      const errorCode = opts.errorCode ?? (status === 'sent' ? undefined : DEFAULT_ERROR_CODES[status]);
      const params: Record<string, string> = {
        AccountSid: accountSid,
        ApiVersion: '2010-04-01',
        From: message.from ?? '+15005550006',
        MessageSid: sid,
        MessageStatus: status,
        SmsSid: sid,
        SmsStatus: status,
        To: message.to,
        ...(message.messagingServiceSid ? { MessagingServiceSid: message.messagingServiceSid } : {}),
        ...(errorCode ? { ErrorCode: errorCode } : {}),
      };
      return signedPost(url, params, token);
    },
    sendInbound(webhookUrl: string, message: { From: string; To: string; Body: string }, token = authToken) {
      const sid = `SM${randomHex(32)}`;
      const params: Record<string, string> = {
        AccountSid: accountSid,
        ApiVersion: '2010-04-01',
        Body: message.Body,
        From: message.From,
        MessageSid: sid,
        NumMedia: '0',
        NumSegments: String(smsSegments(message.Body).segments),
        SmsMessageSid: sid,
        SmsSid: sid,
        SmsStatus: 'received',
        To: message.To,
      };
      return signedPost(webhookUrl, params, token);
    },
  });
}

function authorized(request: RawRequest, pathSid: string, accountSid: string, authToken: string): boolean {
  const header = request.headers.authorization ?? '';
  if (!header.startsWith('Basic ')) return false;
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
  return pathSid === accountSid && decoded === `${accountSid}:${authToken}`;
}

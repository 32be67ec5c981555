// One webhook request: a POST over keep-alive connections with a deadline, never following a
// redirect (Node's http client does not), refusing non-public addresses unless the install allows
// private webhook URLs, and reading at most a little of the answer.
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { NonPublicAddressError, assertPublicHost, publicOnlyLookup } from '../base/net/public-address.ts';
import { allowsPrivate } from '../base/net/allow-private.ts';
import { trustedCas } from '../base/net/trusted-cas.ts';
import type { Context } from '../base/context.ts';

const MAX_ANSWER_BYTES = 64 * 1024;

export type PostResult =
  { kind: 'answered'; status: number } | { kind: 'unreachable'; error: string } | { kind: 'refused'; error: string };

interface Agents {
  http: HttpAgent;
  https: HttpsAgent;
}

const agentsOf = new WeakMap<Context, Agents>();

function agents(runtime: Context): Agents {
  let found = agentsOf.get(runtime);
  if (!found) {
    const ca = trustedCas(runtime.config);
    const created: Agents = {
      http: new HttpAgent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 64 }),
      https: new HttpsAgent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 64, ...(ca ? { ca } : {}) }),
    };
    found = created;
    agentsOf.set(runtime, created);
    runtime.cleanups.push(async () => {
      created.http.destroy();
      created.https.destroy();
    });
  }
  return found;
}

/** A refused address's error names the setting that allows private ones. */
const refusal = (error: Error) => `${error.message} ${allowsPrivate('allowPrivateWebhookUrls')}`;

export function postWebhook(
  runtime: Context,
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<PostResult> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve({ kind: 'refused', error: 'invalid URL' });
  }
  const publicOnly = !runtime.config.allowPrivateWebhookUrls;
  const https = target.protocol === 'https:';
  if (!https && target.protocol !== 'http:')
    return Promise.resolve({ kind: 'refused', error: `unsupported URL scheme ${target.protocol}` });
  if (publicOnly) {
    try {
      assertPublicHost(target);
    } catch (error) {
      return Promise.resolve({ kind: 'refused', error: refusal(error as Error) });
    }
  }
  const { http, https: tls } = agents(runtime);
  return new Promise((resolve) => {
    const send = https ? httpsRequest : httpRequest;
    const req = send(
      target,
      {
        method: 'POST',
        agent: https ? tls : http,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Herald-Webhooks/1',
          'content-length': String(Buffer.byteLength(body)),
          ...headers,
        },
        ...(publicOnly ? { lookup: publicOnlyLookup as never } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      },
      (res) => {
        // The answer's body is not used: drain a little of it so the connection can be reused, and
        // drop the connection of an endpoint that sends more.
        const status = res.statusCode ?? 0;
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) {
            res.destroy();
            resolve({ kind: 'answered', status });
          }
        });
        res.on('end', () => resolve({ kind: 'answered', status }));
        res.on('error', () => resolve({ kind: 'answered', status }));
      },
    );
    req.on('error', (error: Error) => {
      if (error instanceof NonPublicAddressError) resolve({ kind: 'refused', error: refusal(error) });
      else
        resolve({
          kind: 'unreachable',
          error:
            error.name === 'TimeoutError' || error.name === 'AbortError'
              ? `no answer within ${timeoutMs} ms`
              : error.message,
        });
    });
    req.end(body);
  });
}

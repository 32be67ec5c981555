// Reading request bodies (JSON, forms) with a hard size cap and a read deadline: the Content-Length is
// checked first, and the stream is counted as it arrives, so an oversized or endless body is cut off
// without being buffered, and one trickling in is answered 408 instead of holding its connection.
import type { Readable } from 'node:stream';
import { AppError, ValidationFailure } from '../base/errors.ts';
import { MAX_JSON_DEPTH, tooDeepPath } from '../base/json-depth.ts';

/** What srvx's Node adapter adds to the requests it serves: the Node request the web Request wraps. */
interface NodeServedRequest {
  runtime?: { node?: { req?: Readable } };
}

export async function readJsonBody(request: Request, maxBytes: number, timeoutMs: number): Promise<unknown> {
  const body = await readBody(request, maxBytes, timeoutMs);
  if (body.byteLength === 0) return undefined;
  const text = body.toString('utf8');
  if (text.trim() === '') return undefined;
  const type = request.headers.get('content-type');
  if (type && !/^application\/([\w.+-]*\+)?json\b/i.test(type)) {
    throw new AppError('unsupported_media_type', 'Request bodies must be JSON (Content-Type: application/json)');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ValidationFailure([
      { loc: ['body'], msg: `Malformed JSON: ${(error as Error).message}`, type: 'json_invalid' },
    ]);
  }
  const deep = tooDeepPath(text, value);
  if (deep) {
    throw new ValidationFailure([
      { loc: ['body', ...deep], msg: `Nested deeper than ${MAX_JSON_DEPTH} levels`, type: 'json_too_deep' },
    ]);
  }
  return value;
}

/**
 * The whole body, within the cap and, served by Node, the deadline. A web Request's body (tests that
 * call the app directly) is read without one: no socket is held by it.
 */
async function readBody(request: Request, maxBytes: number, timeoutMs: number): Promise<Buffer<ArrayBuffer>> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const nodeRequest = (request as NodeServedRequest).runtime?.node?.req;
  return nodeRequest ? readNodeRequest(nodeRequest, maxBytes, timeoutMs) : readChunks(request.body, maxBytes);
}

async function readChunks(chunks: AsyncIterable<Uint8Array> | null, maxBytes: number): Promise<Buffer<ArrayBuffer>> {
  const received: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of chunks ?? []) {
    total += chunk.byteLength;
    if (total > maxBytes) throw tooLarge(maxBytes);
    received.push(chunk);
  }
  return Buffer.concat(received, total);
}

/**
 * A Node request's whole body, read with listeners: its async iterator costs more than the rest of
 * reading a small body. Past the cap, or past `timeoutMs` (a body trickling in holds a connection and
 * a pool's worth of nothing), it stops reading (paused, not destroyed: the 413 or 408 still has to go
 * out on the socket).
 */
function readNodeRequest(request: Readable, maxBytes: number, timeoutMs: number): Promise<Buffer<ArrayBuffer>> {
  if (request.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const received: Buffer<ArrayBuffer>[] = [];
    let total = 0;
    const deadline = setTimeout(() => {
      request.pause();
      settle(
        new AppError('request_timeout', `The request body did not arrive within ${timeoutMs} ms`, {
          headers: { Connection: 'close' },
        }),
      );
    }, timeoutMs);
    const settle = (error: unknown, body?: Buffer<ArrayBuffer>) => {
      clearTimeout(deadline);
      request.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (error) reject(error);
      else resolve(body!);
    };
    const onData = (chunk: Buffer<ArrayBuffer>) => {
      total += chunk.byteLength;
      if (total <= maxBytes) return void received.push(chunk);
      request.pause();
      settle(tooLarge(maxBytes));
    };
    const onEnd = () => settle(null, Buffer.concat(received, total));
    const onError = (error: unknown) => settle(error);
    const onClose = () => settle(new Error('the request closed before its body ended'));
    request.on('data', onData).once('end', onEnd).once('error', onError).once('close', onClose);
  });
}

/**
 * The request body as it arrives, or null when there is none. Served by Node: the Node request itself;
 * the web stream srvx would build over it costs more than the rest of reading a small body. Stopping
 * early must not destroy the socket: the 413 still has to go out on it.
 */
export function requestBodyChunks(request: Request): AsyncIterable<Uint8Array> | null {
  const nodeRequest = (request as NodeServedRequest).runtime?.node?.req;
  return nodeRequest ? nodeRequest.iterator({ destroyOnReturn: false }) : request.body;
}

function tooLarge(maxBytes: number): AppError {
  return new AppError('payload_too_large', `Request body exceeds ${maxBytes} bytes`);
}

/**
 * Reads an HTML form body (application/x-www-form-urlencoded or multipart/form-data) with the same
 * size cap and deadline; any other content type is refused with 415. Non-text multipart fields are ignored.
 */
export async function readFormBody(request: Request, maxBytes: number, timeoutMs: number): Promise<URLSearchParams> {
  const raw = await readBody(request, maxBytes, timeoutMs);
  const type = request.headers.get('content-type') ?? '';
  if (/^application\/x-www-form-urlencoded\b/i.test(type) || (type === '' && raw.byteLength > 0))
    return new URLSearchParams(raw.toString('utf8'));
  if (/^multipart\/form-data\b/i.test(type)) {
    try {
      const form = await new Response(raw, { headers: { 'content-type': type } }).formData();
      const out = new URLSearchParams();
      for (const [name, value] of form) if (typeof value === 'string') out.append(name, value);
      return out;
    } catch {
      throw new ValidationFailure([{ loc: ['body'], msg: 'Malformed multipart/form-data body', type: 'form_invalid' }]);
    }
  }
  if (raw.byteLength === 0) return new URLSearchParams();
  throw new AppError(
    'unsupported_media_type',
    'This form takes application/x-www-form-urlencoded or multipart/form-data',
  );
}

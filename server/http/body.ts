// Reading JSON request bodies with a hard size cap: the Content-Length is checked first, and the
// stream is counted as it arrives, so an oversized or endless body is cut off without being buffered.
import type { Readable } from 'node:stream';
import { AppError, ValidationFailure } from '../errors.ts';

/** What srvx's Node adapter adds to the requests it serves: the Node request the web Request wraps. */
interface NodeServedRequest {
  runtime?: { node?: { req?: Readable } };
}

export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const chunks = requestBodyChunks(request);
  if (!chunks) return undefined;
  const received: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of chunks) {
    total += chunk.byteLength;
    if (total > maxBytes) throw tooLarge(maxBytes);
    received.push(chunk);
  }
  if (total === 0) return undefined;
  const text = Buffer.concat(received).toString('utf8');
  if (text.trim() === '') return undefined;
  const type = request.headers.get('content-type');
  if (type && !/^application\/([\w.+-]*\+)?json\b/i.test(type)) {
    throw new AppError('unsupported_media_type', 'Request bodies must be JSON (Content-Type: application/json)');
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ValidationFailure([{ loc: ['body'], msg: `Malformed JSON: ${(error as Error).message}`, type: 'json_invalid' }]);
  }
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

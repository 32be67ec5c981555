// Reading JSON request bodies with a hard size cap: the Content-Length is checked first, and the
// stream is counted as it arrives, so an oversized or endless body is cut off without being buffered.
import { AppError, ValidationFailure } from '../errors.ts';

export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  if (!request.body) return undefined;
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  if (total === 0) return undefined;
  const text = Buffer.concat(chunks).toString('utf8');
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

function tooLarge(maxBytes: number): AppError {
  return new AppError('payload_too_large', `Request body exceeds ${maxBytes} bytes`);
}

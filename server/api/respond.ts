// The one place that turns results and errors into HTTP responses: ErrorResponse {detail, code} for
// AppErrors, HTTPValidationError {detail: [{loc, msg, type}]} for validation failures, and a bare 500
// with a logged error id for anything unexpected (no internals ever reach the client).
import { randomUUID } from 'node:crypto';
import { FastResponse } from 'srvx';
import { AppError, ValidationFailure, type ErrorCode } from '../base/errors.ts';
import type { Logger } from '../base/logger.ts';

/**
 * A JSON response. srvx's FastResponse is a Response that its Node adapter writes out as the string it
 * holds; a plain Response would be turned into a web stream and read back, which cost more CPU than
 * building the body.
 */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  if (status === 204 || body === undefined) return new FastResponse(null, { status, headers });
  return new FastResponse(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

export function errorResponse(
  status: number,
  code: ErrorCode | string,
  detail: string,
  headers: Record<string, string> = {},
): Response {
  return json(status, { detail, code }, headers);
}

export function errorToResponse(error: unknown, logger: Logger, context: Record<string, unknown>): Response {
  if (error instanceof ValidationFailure) return json(422, { detail: error.issues });
  if (error instanceof AppError) return errorResponse(error.status, error.code, error.message, error.headers);
  const errorId = randomUUID();
  logger.error('unhandled error', { ...context, error_id: errorId, error: describe(error) });
  return errorResponse(500, 'internal_error', `Internal error; reference ${errorId}`);
}

function describe(error: unknown): Record<string, unknown> {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack };
  return { value: String(error) };
}

// The one error type and the one table of error codes. Services throw AppError (or ValidationFailure);
// server/api/respond.ts is the only place that turns errors into HTTP responses.

/** Every machine-readable error code Herald answers with, and its HTTP status. */
export const ERROR_CODES = {
  // 401: missing, malformed, expired or revoked credential; failed login
  unauthorized: 401,
  invalid_credentials: 401,
  invalid_mfa_token: 401,
  invalid_mfa_code: 401,
  // 402: plan caps (never on sends)
  plan_limit_reached: 402,
  // 403: authenticated but not allowed
  forbidden: 403,
  not_a_member: 403,
  insufficient_role: 403,
  wrong_credential_kind: 403,
  tenant_creation_disabled: 403,
  invitation_email_mismatch: 403,
  mfa_enrolment_required: 403,
  // 404
  not_found: 404,
  route_not_found: 404,
  // 405
  method_not_allowed: 405,
  // 408: a request body that did not arrive in time
  request_timeout: 408,
  // 409: duplicates and conflicting states
  conflict: 409,
  email_taken: 409,
  signup_closed: 409,
  already_exists: 409,
  already_member: 409,
  invitation_pending: 409,
  invitation_not_pending: 409,
  own_membership: 409,
  default_brand: 409,
  tenant_archived: 409,
  idempotency_in_flight: 409,
  event_final: 409,
  user_exists: 409,
  mfa_already_enabled: 409,
  // 413
  payload_too_large: 413,
  // 415
  unsupported_media_type: 415,
  // 422: semantic failures that are not field validation
  invalid_link: 422,
  link_expired: 422,
  weak_password: 422,
  idempotency_key_reused: 422,
  not_configured: 422,
  mfa_not_enabled: 422,
  mfa_enrolment_not_started: 422,
  unprocessable: 422,
  // 429
  rate_limited: 429,
  // 500 / 503
  internal_error: 500,
  service_unavailable: 503,
  data_request_unavailable: 503,
  database_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class AppError extends Error {
  override name = 'AppError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(code: ErrorCode, detail: string, options: { headers?: Record<string, string>; cause?: unknown } = {}) {
    super(detail, { cause: options.cause });
    this.code = code;
    this.status = ERROR_CODES[code];
    this.headers = options.headers ?? {};
  }
}

/** One entry of an HTTPValidationError body. */
export interface ValidationIssue {
  loc: Array<string | number>;
  msg: string;
  type: string;
}

/** A 422 with HTTPValidationError body: field-level problems with the request. */
export class ValidationFailure extends Error {
  override name = 'ValidationFailure';
  readonly issues: ValidationIssue[];
  constructor(issues: ValidationIssue[]) {
    super(issues.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
    this.issues = issues;
  }
}

/** Shorthand for the common single-field validation failure. */
export function invalidField(loc: Array<string | number>, msg: string, type = 'value_error'): ValidationFailure {
  return new ValidationFailure([{ loc, msg, type }]);
}

export function notFound(what: string): AppError {
  return new AppError('not_found', `${what} not found`);
}

// The console's only way to the server: the public /v1 API with the signed-in user's Bearer token,
// kept in sessionStorage (this tab only; gone when it closes). No cookies: a forged cross-site request
// carries no credential, so CSRF is not possible.
const TOKEN = 'herald.token';
const TENANT = 'herald.tenant';
const EXPIRES = 'herald.expires';

export class ApiError extends Error {
  constructor(status, body) {
    super(messageOf(status, body));
    this.status = status;
    this.code = body && typeof body === 'object' && typeof body.code === 'string' ? body.code : null;
    this.fields = body && Array.isArray(body.detail) ? body.detail : [];
  }
}

function messageOf(status, body) {
  if (body && typeof body.detail === 'string') return body.detail;
  if (body && Array.isArray(body.detail)) {
    return body.detail.map((d) => `${(d.loc ?? []).filter((l) => l !== 'body').join('.') || 'input'}: ${d.msg}`).join('; ');
  }
  if (status === 0) return 'Herald cannot be reached. Check your connection and try again.';
  return `The request failed (${status}).`;
}

export const session = {
  get token() {
    const expires = Number(sessionStorage.getItem(EXPIRES) ?? 0);
    if (expires && expires < Date.now()) {
      this.clear();
      return null;
    }
    return sessionStorage.getItem(TOKEN);
  },
  get tenantId() {
    return sessionStorage.getItem(TENANT);
  },
  /** The signed-in user's id, read from the token for display only (the server checks every call). */
  get userId() {
    try {
      const payload = (this.token ?? '').split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      return JSON.parse(atob(payload)).sub ?? null;
    } catch {
      return null;
    }
  },
  /** Keeps an AccessTokenResponse. */
  save(access) {
    sessionStorage.setItem(TOKEN, access.access_token);
    sessionStorage.setItem(TENANT, access.tenant_id);
    sessionStorage.setItem(EXPIRES, String(Date.now() + Number(access.expires_in) * 1000));
  },
  clear() {
    sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(TENANT);
    sessionStorage.removeItem(EXPIRES);
  },
};

/** Listeners told when the server says the token is no longer good (401). */
const expiredListeners = new Set();
export function onSessionExpired(listener) {
  expiredListeners.add(listener);
}

/** Listeners told when the tenant requires a second factor the user has not set up (403 mfa_enrolment_required). */
const enrolmentListeners = new Set();
export function onMfaEnrolmentRequired(listener) {
  enrolmentListeners.add(listener);
}

/** Calls the API; resolves with the parsed body (undefined for 204), rejects with ApiError. */
export async function api(method, path, body, options = {}) {
  const headers = { Accept: 'application/json' };
  const token = options.token === undefined ? session.token : options.token;
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
  } catch {
    throw new ApiError(0, null);
  }
  const text = await response.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    if (response.status === 401 && token && options.token === undefined) for (const listener of expiredListeners) listener();
    if (response.status === 403 && parsed?.code === 'mfa_enrolment_required') for (const listener of enrolmentListeners) listener();
    throw new ApiError(response.status, parsed);
  }
  return parsed;
}

/** A query string from an object, leaving out empty values. */
export function qs(params) {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') search.set(k, String(v));
  const s = search.toString();
  return s ? `?${s}` : '';
}

// Authorization: applies a route's credential rule to the credential server/base/auth/authenticate.ts
// verified (403 for a valid credential of the wrong kind or role).
import { AppError } from '../base/errors.ts';
import { roleAtLeast } from '../base/auth/roles.ts';
import type { Credential } from '../base/auth/credentials.ts';
import type { AuthRule } from './route.ts';

// The credential helpers, re-exported for the HTTP layer: routes import everything about auth from here.
export { authenticate } from '../base/auth/authenticate.ts';
export {
  SERVICE_KEY_PREFIX,
  bearerToken,
  hashServiceKey,
  unauthorized,
  type Credential,
} from '../base/auth/credentials.ts';

/**
 * Applies a route's credential rule to a verified credential: 403 for a valid credential of the wrong
 * kind or role, and for a user whose tenant requires a second factor they have not set up, on every
 * route but those that set one up (`openDuringMfaEnrolment`).
 */
export function authorize(route: { auth: AuthRule; openDuringMfaEnrolment?: boolean }, credential: Credential): void {
  authorizeRule(route.auth, credential);
  if (credential.kind === 'user' && credential.mfaEnrolmentRequired && !route.openDuringMfaEnrolment)
    throw new AppError(
      'mfa_enrolment_required',
      'This tenant requires a second factor: set one up (POST /v1/auth/mfa/totp) before anything else',
    );
}

function authorizeRule(rule: AuthRule, credential: Credential): void {
  const wrongKind = () => new AppError('wrong_credential_kind', 'This credential cannot be used on this route');
  switch (rule) {
    case 'public':
      return;
    case 'user':
      if (credential.kind !== 'user') throw wrongKind();
      return;
    case 'service':
      // The host operator has a service key's rights (the CLI's local mode).
      if (credential.kind !== 'service' && credential.kind !== 'host') throw wrongKind();
      return;
    case 'contact':
      if (credential.kind !== 'contact') throw wrongKind();
      return;
    case 'management':
      if (credential.kind === 'contact') throw wrongKind();
      if (credential.kind === 'user') requireTenantRole(credential, 'admin');
      return;
    case 'either':
      if (credential.kind === 'user') requireTenantRole(credential, 'admin');
      return;
    case 'any':
      if (credential.kind === 'user' && credential.role === null)
        throw new AppError('not_a_member', 'You are not a member of this tenant');
      return;
  }
}

export function requireTenantRole(credential: Extract<Credential, { kind: 'user' }>, minimum: 'admin' | 'owner'): void {
  if (credential.role === null) throw new AppError('not_a_member', 'You are not a member of this tenant');
  if (!roleAtLeast(credential.role, minimum))
    throw new AppError('insufficient_role', `This action needs the ${minimum} role`);
}

/** The signed-in user of a route whose rule is 'user' (the wrapper has already checked the kind). */
export function userIdOf(auth: Credential | null): string {
  if (auth?.kind !== 'user') throw new AppError('wrong_credential_kind', 'This route needs a signed-in console user');
  return auth.userId;
}

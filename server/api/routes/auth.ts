// Sign-up, sign-in and recovery (no credential). Handlers stay thin: validate -> service -> response.
import { defineRoute, reply } from '../route.ts';
import { FreeFormObject } from '../../schemas/common.ts';
import {
  LoginRequest,
  PasswordResetTokenStatusResponse,
  RegisterRequest,
  RequestPasswordResetRequest,
  ResendVerificationRequest,
  ResetPasswordRequest,
  TokenParams,
  UserResponse,
  VerifyEmailRequest,
} from '../../schemas/auth.ts';
import { RATE_POLICIES, giveBack } from '../../base/rate-limit.ts';
import { SignInResponse } from '../../schemas/mfa.ts';
import * as auth from '../../resources/auth.ts';
import * as mfa from '../../resources/mfa.ts';

const TAG = 'auth';

export const register = defineRoute({
  method: 'POST',
  path: '/v1/auth/register',
  summary: 'Sign up: creates the user (unverified), their tenant and its default brand, and mails a verification link',
  tag: TAG,
  auth: 'public',
  body: RegisterRequest,
  responses: { 201: UserResponse },
  errors: [409],
  rateLimit: ({ ip }) => [{ policy: RATE_POLICIES.register, subject: ip }],
  handler: ({ runtime, em, body }) =>
    auth.register(runtime, em, { email: body.email, password: body.password, tenantName: body.tenant_name }),
});

export const login = defineRoute({
  method: 'POST',
  path: '/v1/auth/login',
  summary:
    "Sign in: an access token scoped to the user's default tenant, or, when the user has a second factor, " +
    'an mfa_token for POST /v1/auth/mfa/verify',
  tag: TAG,
  auth: 'public',
  body: LoginRequest,
  responses: { 200: SignInResponse },
  errors: [401, 403],
  // Counted by IP and by the email attempted at once (all or nothing); a right password gets the
  // email's token back, so the per-email limit counts failed attempts only and an owner who signs in
  // often is not locked out by it.
  rateLimit: ({ ip, body }) => [
    { policy: RATE_POLICIES.loginIp, subject: ip },
    { policy: RATE_POLICIES.loginEmail, subject: body.email },
  ],
  handler: async ({ runtime, em, body }) => {
    const { userId, tenantId } = await auth.checkLogin(em, body);
    await giveBack(em, { policy: RATE_POLICIES.loginEmail, subject: body.email });
    return mfa.signInOrAskForSecondFactor(runtime, em, userId, tenantId);
  },
});

export const verifyEmail = defineRoute({
  method: 'POST',
  path: '/v1/auth/verify-email',
  summary: "Confirms the user's email address with the emailed link token (single use)",
  tag: TAG,
  auth: 'public',
  body: VerifyEmailRequest,
  responses: { 204: null },
  handler: async ({ runtime, em, body }) => {
    await auth.verifyEmail(runtime, em, body.token);
    return reply(204);
  },
});

export const resendVerification = defineRoute({
  method: 'POST',
  path: '/v1/auth/resend-verification',
  summary: 'Mails a new verification link to an unverified user; always 202, whether or not the address has an account',
  tag: TAG,
  auth: 'public',
  body: ResendVerificationRequest,
  responses: { 202: FreeFormObject },
  errors: [503],
  rateLimit: ({ ip }) => [{ policy: RATE_POLICIES.accountRecovery, subject: ip }],
  handler: async ({ runtime, body }) => {
    await auth.requestEmailLink(runtime, 'verify', body.email);
    return {};
  },
});

export const requestPasswordReset = defineRoute({
  method: 'POST',
  path: '/v1/auth/password-reset',
  summary: 'Mails a password-reset link; always 202, whether or not the address has an account',
  tag: TAG,
  auth: 'public',
  body: RequestPasswordResetRequest,
  responses: { 202: FreeFormObject },
  errors: [503],
  rateLimit: ({ ip }) => [{ policy: RATE_POLICIES.accountRecovery, subject: ip }],
  handler: async ({ runtime, body }) => {
    await auth.requestEmailLink(runtime, 'reset', body.email);
    return {};
  },
});

export const passwordResetStatus = defineRoute({
  method: 'GET',
  path: '/v1/auth/password-reset/:token',
  summary: 'Whether a reset link can still be used (unknown, used and expired links look the same)',
  tag: TAG,
  auth: 'public',
  params: TokenParams,
  responses: { 200: PasswordResetTokenStatusResponse },
  handler: async ({ runtime, em, params }) => ({ valid: await auth.resetTokenValid(runtime, em, params.token) }),
});

export const confirmPasswordReset = defineRoute({
  method: 'POST',
  path: '/v1/auth/password-reset/confirm',
  summary: 'Sets a new password with a reset link (single use); issued access tokens stay valid until they expire',
  tag: TAG,
  auth: 'public',
  body: ResetPasswordRequest,
  responses: { 204: null },
  handler: async ({ runtime, em, body }) => {
    await auth.confirmPasswordReset(runtime, em, body);
    return reply(204);
  },
});

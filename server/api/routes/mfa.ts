// A console user's second factor: their own enrolment, confirmation and removal (signed in), and the
// sign-in's second step (no credential: the mfa_token login answered). Audit entries name the user
// and never carry a code.
import { defineRoute, reply, type RouteContext } from '../route.ts';
import { AccessTokenResponse } from '../../schemas/auth.ts';
import {
  MfaStatusResponse,
  MfaVerifyRequest,
  RecoveryCodesResponse,
  TotpConfirmRequest,
  TotpDisableRequest,
  TotpEnrolmentResponse,
} from '../../schemas/mfa.ts';
import { RATE_POLICIES, giveBack } from '../../base/rate-limit.ts';
import * as mfa from '../../resources/mfa.ts';
import { userIdOf } from '../auth-rules.ts';

const TAG = 'mfa';

/** The user's own factor is what these write: the entry names them, and records no code. */
const auditOf = (action: string, changes: (ctx: RouteContext) => unknown = () => null) => ({
  action,
  target: 'user',
  id: (ctx: RouteContext) => userIdOf(ctx.auth),
  changes,
});

const proofOf = (body: { code?: string | undefined; recovery_code?: string | undefined }): mfa.MfaProof =>
  body.recovery_code !== undefined ? { recoveryCode: body.recovery_code } : { code: body.code! };

export const status = defineRoute({
  method: 'GET',
  path: '/v1/auth/mfa',
  summary: "The signed-in user's second factor, and whether the token's tenant requires one",
  tag: TAG,
  auth: 'user',
  openDuringMfaEnrolment: true,
  responses: { 200: MfaStatusResponse },
  handler: ({ em, auth }) => mfa.secondFactorStatus(em, userIdOf(auth), auth!.tenantId),
});

export const enrolTotp = defineRoute({
  method: 'POST',
  path: '/v1/auth/mfa/totp',
  summary:
    'Starts a TOTP enrolment: the secret as an otpauth:// URI and its QR code (SVG), pending until confirmed; ' +
    'a restart replaces a pending one',
  tag: TAG,
  auth: 'user',
  openDuringMfaEnrolment: true,
  responses: { 201: TotpEnrolmentResponse },
  errors: [409],
  audit: auditOf('mfa.totp.enrol'),
  handler: ({ runtime, em, auth }) => mfa.startTotpEnrolment(runtime, em, userIdOf(auth)),
});

export const confirmTotp = defineRoute({
  method: 'POST',
  path: '/v1/auth/mfa/totp/confirm',
  summary:
    "Confirms the enrolment with the authenticator's current code; answers ten recovery codes, once " +
    '(each signs in once in place of a code)',
  tag: TAG,
  auth: 'user',
  openDuringMfaEnrolment: true,
  body: TotpConfirmRequest,
  responses: { 200: RecoveryCodesResponse },
  errors: [409, 422],
  audit: auditOf('mfa.totp.confirm'),
  handler: ({ runtime, em, auth, body }) => mfa.confirmTotpEnrolment(runtime, em, userIdOf(auth), body.code),
});

export const disableTotp = defineRoute({
  method: 'POST',
  path: '/v1/auth/mfa/totp/disable',
  summary: "Removes the user's own second factor, proven by a current code or an unused recovery code",
  tag: TAG,
  auth: 'user',
  body: TotpDisableRequest,
  responses: { 204: null },
  errors: [422],
  rateLimit: ({ auth }) => [{ policy: RATE_POLICIES.mfaCode, subject: userIdOf(auth) }],
  audit: auditOf('mfa.totp.disable', (ctx) => ({
    proven_with: (ctx.body as { recovery_code?: string }).recovery_code !== undefined ? 'recovery_code' : 'code',
  })),
  handler: async ({ runtime, em, auth, body }) => {
    await mfa.disableTotp(runtime, em, userIdOf(auth), proofOf(body));
    return reply(204);
  },
});

export const verify = defineRoute({
  method: 'POST',
  path: '/v1/auth/mfa/verify',
  summary:
    "The sign-in's second step: the mfa_token login answered and the authenticator's code (or a recovery " +
    'code) answer the access token; the mfa_token works once, for five minutes',
  tag: TAG,
  auth: 'public',
  body: MfaVerifyRequest,
  responses: { 200: AccessTokenResponse },
  errors: [401],
  // Counted by IP (with login's attempts) and by the user the mfa_token is for, all or nothing; a right
  // code gets the user's token back, as a right password does at login: the per-user limit counts
  // wrong codes, so a user who signs in often is not locked out by it.
  rateLimit: async ({ ip, em, body }) => [
    { policy: RATE_POLICIES.loginIp, subject: ip },
    { policy: RATE_POLICIES.mfaCode, subject: await mfa.challengeRateSubject(em, body.mfa_token) },
  ],
  handler: async ({ runtime, em, body }) => {
    const subject = await mfa.challengeRateSubject(em, body.mfa_token);
    const signedIn = await mfa.verifySecondFactor(runtime, em, { mfaToken: body.mfa_token, ...proofOf(body) });
    await giveBack(em, { policy: RATE_POLICIES.mfaCode, subject });
    return signedIn;
  },
});

// Shapes of console users' second factor (/v1/auth/mfa/...): TOTP enrolment, recovery codes, the
// sign-in's second step, and what login answers when a factor is set.
import { z } from 'zod';
import { AccessTokenResponse } from './auth.ts';
import { LINK_TOKEN_PATTERN } from '../base/auth/link-tokens.ts';
import { RECOVERY_CODE_PATTERN, TOTP_DIGITS } from '../base/auth/totp.ts';

/** The authenticator's code: spaces (as some apps show it, "123 456") are dropped. */
export const totpCode = z
  .string()
  .max(32)
  .transform((v) => v.replace(/\s+/g, ''))
  .pipe(z.string().regex(new RegExp(`^\\d{${TOTP_DIGITS}}$`), `must be the ${TOTP_DIGITS}-digit code`));

/** A recovery code as printed (xxxx-xxxx-xxxx-xxxx); case, spaces and dashes do not matter. */
export const recoveryCode = z
  .string()
  .max(64)
  .transform((v) => v.toLowerCase().replace(/[\s-]+/g, ''))
  .pipe(z.string().regex(RECOVERY_CODE_PATTERN, 'must be a recovery code (16 letters and digits)'));

const oneProof = <T extends { code?: string | undefined; recovery_code?: string | undefined }>(v: T) =>
  (v.code === undefined) !== (v.recovery_code === undefined);
const ONE_PROOF = { message: 'give exactly one of code and recovery_code' };

export const MfaVerifyRequest = z
  .object({
    mfa_token: z.string().regex(LINK_TOKEN_PATTERN, 'must be the mfa_token login answered'),
    code: totpCode.optional(),
    recovery_code: recoveryCode.optional(),
  })
  .refine(oneProof, ONE_PROOF)
  .meta({ id: 'MfaVerifyRequest' });

export const TotpConfirmRequest = z.object({ code: totpCode }).meta({ id: 'TotpConfirmRequest' });

export const TotpDisableRequest = z
  .object({ code: totpCode.optional(), recovery_code: recoveryCode.optional() })
  .refine(oneProof, ONE_PROOF)
  .meta({ id: 'TotpDisableRequest' });

export const TotpEnrolmentResponse = z
  .object({
    otpauth_uri: z.string().describe('otpauth://totp/... for an authenticator app (it holds the secret)'),
    qr_svg: z.string().describe('The same URI as a QR code, an SVG document'),
  })
  .meta({ id: 'TotpEnrolmentResponse' });

export const RecoveryCodesResponse = z
  .object({
    recovery_codes: z.array(z.string()).describe('Shown once: each signs in once in place of a code'),
  })
  .meta({ id: 'RecoveryCodesResponse' });

export const MfaStatusResponse = z
  .object({
    totp_enabled: z.boolean(),
    enabled_at: z.string().nullable(),
    enrolment_pending: z.boolean().describe('An enrolment was started and not yet confirmed'),
    recovery_codes_remaining: z.number().int(),
    required: z.boolean().describe("Whether the token's tenant requires a second factor of its members"),
  })
  .meta({ id: 'MfaStatusResponse' });

export const MfaChallengeResponse = z
  .object({
    mfa_required: z.literal(true),
    mfa_token: z.string().describe('For POST /v1/auth/mfa/verify: single use, short-lived'),
    expires_in: z.number().int(),
  })
  .meta({ id: 'MfaChallengeResponse' });

/** Login (and an SSO sign-in) answer a token, or, when the user has a second factor, the step asking for it. */
export const SignInResponse = z.union([AccessTokenResponse, MfaChallengeResponse]).meta({ id: 'SignInResponse' });

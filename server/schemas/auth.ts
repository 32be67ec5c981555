// Shapes of sign-up, sign-in and recovery (/v1/auth/register, login, verify-email, password reset).
import { z } from 'zod';
import { email } from './common.ts';
import { PASSWORD_MAX, PASSWORD_MIN } from '../base/auth/passwords.ts';
import { LINK_TOKEN_PATTERN } from '../base/auth/link-tokens.ts';

export const password = z
  .string()
  .min(PASSWORD_MIN, `must be at least ${PASSWORD_MIN} characters`)
  .max(PASSWORD_MAX, `must be at most ${PASSWORD_MAX} characters`);

/** Tenant names are trimmed, then 1..100 characters. */
export const tenantName = z.string().trim().min(1, 'must not be blank').max(100, 'must be at most 100 characters');

export const linkToken = z.string().regex(LINK_TOKEN_PATTERN, 'must be a link token');

/** Login accepts any password length: a bound here would tell an attacker which passwords cannot exist. */
const loginPassword = z.string().min(1).max(1024);

export const RegisterRequest = z.object({ email, password, tenant_name: tenantName }).meta({ id: 'RegisterRequest' });
export const LoginRequest = z.object({ email, password: loginPassword }).meta({ id: 'LoginRequest' });
export const VerifyEmailRequest = z.object({ token: linkToken }).meta({ id: 'VerifyEmailRequest' });
export const ResendVerificationRequest = z.object({ email }).meta({ id: 'ResendVerificationRequest' });
export const RequestPasswordResetRequest = z.object({ email }).meta({ id: 'RequestPasswordResetRequest' });
export const ResetPasswordRequest = z.object({ token: linkToken, password }).meta({ id: 'ResetPasswordRequest' });

export const UserResponse = z
  .object({ id: z.string(), email: z.string(), email_verified: z.boolean(), created_at: z.string() })
  .meta({ id: 'UserResponse' });
export const AccessTokenResponse = z
  .object({
    access_token: z.string(),
    token_type: z.literal('bearer'),
    expires_in: z.number().int(),
    tenant_id: z.string(),
  })
  .meta({ id: 'AccessTokenResponse' });
export const PasswordResetTokenStatusResponse = z
  .object({ valid: z.boolean() })
  .meta({ id: 'PasswordResetTokenStatusResponse' });

export const TokenParams = z.object({ token: z.string().min(1).max(256) });

// Renders Herald's own emails (verification, password reset, invitation) from the react-email
// templates in templates/emails/, with the links they carry. Links point at the console pages of the
// install's public URL: /verify-email?token=, /reset-password?token=, /invitations/{token}.
import type { ReactElement, ReactNode } from 'react';
import { publicBaseUrl, type Config } from '../../base/config.ts';
import { renderEmailElement } from '../render.ts';

export type SystemEmail =
  | { kind: 'verify'; to: string; token: string }
  | { kind: 'reset'; to: string; token: string }
  | { kind: 'invitation'; to: string; token: string; tenantName: string; inviterEmail: string | null; role: string };

export interface RenderedSystemEmail {
  subject: string;
  html: string;
  text: string;
}

export function systemEmailLink(config: Config, email: Pick<SystemEmail, 'kind' | 'token'>): string {
  const base = publicBaseUrl(config);
  const token = encodeURIComponent(email.token);
  switch (email.kind) {
    case 'verify':
      return `${base}/verify-email?token=${token}`;
    case 'reset':
      return `${base}/reset-password?token=${token}`;
    case 'invitation':
      return `${base}/invitations/${token}`;
  }
}

export async function renderSystemEmail(config: Config, email: SystemEmail): Promise<RenderedSystemEmail> {
  const url = systemEmailLink(config, email);
  // react-email and the templates load with the first system email (most processes never send one).
  const [
    { VerifyEmail, verifyEmailSubject },
    { ResetPassword, resetPasswordSubject },
    { Invitation, invitationSubject },
  ] = await Promise.all([
    import('../../../templates/emails/verify-email.ts'),
    import('../../../templates/emails/reset-password.ts'),
    import('../../../templates/emails/invitation.ts'),
  ]);
  let subject: string;
  let element: ReactNode;
  switch (email.kind) {
    case 'verify':
      subject = verifyEmailSubject;
      element = VerifyEmail({ url, expiresInHours: Math.round(config.verificationLinkTtlSeconds / 3600) });
      break;
    case 'reset':
      subject = resetPasswordSubject;
      element = ResetPassword({ url, expiresInMinutes: Math.round(config.resetLinkTtlSeconds / 60) });
      break;
    case 'invitation':
      subject = invitationSubject(email.tenantName);
      element = Invitation({
        url,
        tenantName: email.tenantName,
        inviterEmail: email.inviterEmail,
        role: email.role,
        expiresInDays: Math.round(config.invitationTtlSeconds / 86400),
      });
      break;
  }
  return { subject, ...(await renderEmailElement(element as ReactElement)) };
}

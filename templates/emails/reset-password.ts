// Sent on a password-reset request for an existing account.
import React, { type ReactNode } from 'react';
import { SystemEmailLayout } from './layout.ts';

export const resetPasswordSubject = 'Reset your password';

export function ResetPassword(props: { url: string; expiresInMinutes: number }): ReactNode {
  return React.createElement(SystemEmailLayout, {
    preview: 'Reset your Herald password',
    heading: 'Reset your password',
    paragraphs: [
      `Someone asked to reset the password of your Herald account. Choose a new password with this link; it works once and expires in ${props.expiresInMinutes} minutes.`,
    ],
    action: { label: 'Choose a new password', url: props.url },
    footer: 'If you did not ask for this, ignore this email: your password stays as it is.',
  });
}

// Sent at sign-up and on resend-verification: confirms the address belongs to the user.
import React, { type ReactNode } from 'react';
import { SystemEmailLayout } from './layout.ts';

export const verifyEmailSubject = 'Confirm your email address';

export function VerifyEmail(props: { url: string; expiresInHours: number }): ReactNode {
  return React.createElement(SystemEmailLayout, {
    preview: 'Confirm your email address for Herald',
    heading: 'Confirm your email address',
    paragraphs: [
      `Confirm that this address is yours to finish setting up your Herald account. The link works once and expires in ${props.expiresInHours} hours.`,
    ],
    action: { label: 'Confirm email address', url: props.url },
    footer: 'If you did not sign up for Herald, ignore this email: nothing happens without the link.',
  });
}

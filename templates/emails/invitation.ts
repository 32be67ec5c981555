// Sent when a member invites someone to a tenant (the UserInvited event).
import React, { type ReactNode } from 'react';
import { SystemEmailLayout } from './layout.ts';

export function invitationSubject(tenantName: string): string {
  return `You are invited to join ${tenantName} on Herald`;
}

export function Invitation(props: {
  url: string;
  tenantName: string;
  inviterEmail: string | null;
  role: string;
  expiresInDays: number;
}): ReactNode {
  const who = props.inviterEmail ? `${props.inviterEmail} invited you` : 'You have been invited';
  return React.createElement(SystemEmailLayout, {
    preview: `Join ${props.tenantName} on Herald`,
    heading: `Join ${props.tenantName}`,
    paragraphs: [
      `${who} to join ${props.tenantName} on Herald as ${props.role}. The invitation expires in ${props.expiresInDays} days.`,
    ],
    action: { label: 'Accept the invitation', url: props.url },
    footer: 'If you did not expect this invitation, ignore this email.',
  });
}

// The shared layout of Herald's system emails (react-email). Written with React.createElement because
// Node runs these files by stripping types and has no JSX transform.
import React, { type ReactNode } from 'react';
// Each component from its own package: @react-email/components would also load Tailwind, Markdown
// and Prism into every process that sends email, and these layouts use none of them.
import { Body } from '@react-email/body';
import { Button } from '@react-email/button';
import { Container } from '@react-email/container';
import { Head } from '@react-email/head';
import { Heading } from '@react-email/heading';
import { Hr } from '@react-email/hr';
import { Html } from '@react-email/html';
import { Preview } from '@react-email/preview';
import { Text } from '@react-email/text';

const h = React.createElement;

const styles = {
  body: { backgroundColor: '#f5f5f7', fontFamily: 'Helvetica, Arial, sans-serif', margin: 0, padding: '24px 0' },
  container: { backgroundColor: '#ffffff', borderRadius: '8px', margin: '0 auto', maxWidth: '520px', padding: '32px' },
  heading: { color: '#111827', fontSize: '20px', margin: '0 0 16px' },
  text: { color: '#374151', fontSize: '15px', lineHeight: '22px' },
  button: {
    backgroundColor: '#1f4fd1',
    borderRadius: '6px',
    color: '#ffffff',
    fontSize: '15px',
    padding: '12px 20px',
    textDecoration: 'none',
  },
  footer: { color: '#6b7280', fontSize: '12px', lineHeight: '18px' },
} as const;

export interface LayoutProps {
  preview: string;
  heading: string;
  paragraphs: string[];
  action: { label: string; url: string };
  footer: string;
}

/** One call to action, the link also printed in full (for clients that strip buttons), a footer. */
export function SystemEmailLayout(props: LayoutProps): ReactNode {
  return h(
    Html,
    { lang: 'en' },
    h(Head, null),
    h(Preview, null, props.preview),
    h(
      Body,
      { style: styles.body },
      h(
        Container,
        { style: styles.container },
        h(Heading, { as: 'h1', style: styles.heading }, props.heading),
        ...props.paragraphs.map((p, i) => h(Text, { key: i, style: styles.text }, p)),
        h(Button, { href: props.action.url, style: styles.button }, props.action.label),
        h(Text, { style: styles.text }, 'Or open this link: ', props.action.url),
        h(Hr, null),
        h(Text, { style: styles.footer }, props.footer),
      ),
    ),
  );
}

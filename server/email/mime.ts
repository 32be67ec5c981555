// Composing a mail into its RFC 5322 message in one synchronous pass, handed to nodemailer's SMTP
// transport as a raw message. The MIME tree is nodemailer's own (MailComposer: the headers, address
// and word encoding, the parts and their boundaries), and each part is encoded with nodemailer's QP
// and base64 encoders; only the streaming is left out. nodemailer would otherwise stream every part
// through a chain of streams of its own and write each piece to the socket separately, which costs
// more than the whole composition for mails of strings such as ours. The output is the bytes
// nodemailer's own build gives.
import { randomUUID } from 'node:crypto';
import { domainToASCII } from 'node:url';
import MailComposer from 'nodemailer/lib/mail-composer';
import type MimeNode from 'nodemailer/lib/mime-node';
import * as base64 from 'nodemailer/lib/base64';
import * as qp from 'nodemailer/lib/qp';
import type { OutgoingMail } from './smtp.ts';

export interface ComposedMail {
  message: Buffer;
  /** The Message-ID header's value. */
  messageId: string;
  /** MAIL FROM (false: the null sender) and RCPT TO, as nodemailer derives them from the headers or the mail's envelope. */
  envelope: { from: string | false; to: string[] };
}

/** RFC 2045's limit on an encoded line. */
const ENCODED_LINE_LENGTH = 76;

export function composeMail(mail: OutgoingMail): ComposedMail {
  const root = new MailComposer({
    // Both from the pooled randomUUID: nodemailer draws them from five and three randomBytes calls.
    messageId: `<${randomUUID()}@${senderDomain(mail)}>`,
    baseBoundary: randomUUID().replaceAll('-', ''),
    from: mail.from,
    to: mail.to,
    subject: mail.subject,
    html: mail.html,
    text: mail.text,
    replyTo: mail.replyTo,
    headers: mail.headers,
    ...(mail.envelope ? { envelope: mail.envelope } : {}),
  }).compile();
  const envelope = root.getEnvelope();
  let message = serializeNode(root);
  if (!message.endsWith('\n')) message += '\r\n'; // as nodemailer ends a message
  return { message: Buffer.from(message, 'utf8'), messageId: root.messageId(), envelope: { from: envelope.from, to: envelope.to } };
}

/** The domain of the envelope sender, else of the From address, for the Message-ID (as nodemailer picks it). */
function senderDomain(mail: OutgoingMail): string {
  const from = mail.envelope?.from ?? mail.from;
  const domain = /@([^@<>\s"]+)>?\s*$/.exec(from)?.[1];
  return (domain && domainToASCII(domain)) || 'localhost';
}

/** The node's headers, its encoded content and its children, in the order nodemailer streams them. */
function serializeNode(node: MimeNode): string {
  let out = `${node.buildHeaders()}\r\n\r\n`;
  const content = node.content;
  if (content) {
    if (typeof content !== 'string') throw new Error('only text content is composed in one pass');
    const encoding = node.getTransferEncoding();
    if (encoding === 'quoted-printable') out += qp.wrap(qp.encode(content), ENCODED_LINE_LENGTH);
    else if (encoding === 'base64') out += base64.wrap(base64.encode(content), ENCODED_LINE_LENGTH);
    else out += content;
  }
  if (node.multipart) {
    node.childNodes.forEach((child, i) => {
      out += `${i > 0 ? '\r\n' : ''}--${node.boundary}\r\n${serializeNode(child)}`;
    });
    out += `\r\n--${node.boundary}--\r\n`;
  }
  return out;
}

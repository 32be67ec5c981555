// The inbound SMTP listener (config inboundSmtp): receives bounces and complaints addressed to the
// VERP envelope senders of Herald's emails, bounce+{token}@{bounceDomain}. It accepts recipients of
// that domain with a genuine token only (no relay, no authentication, no other mail), caps the
// message size, and applies each report to its delivery. Every refusal is an SMTP error answer with
// a reason; no input makes it throw.
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import type { Context } from '../../base/context.ts';
import { verifyBounceToken } from '../../base/auth/contact-links.ts';
import { readReport } from './feedback-reports.ts';
import { recordEmailFeedback } from './feedback.ts';
import type { LateOutcomeRecorder } from '../types.ts';

export const INBOUND_MAX_BYTES = 1024 * 1024;
const MAX_RECIPIENTS = 20;

export interface InboundSmtpListener {
  host: string;
  port: number;
  close(): Promise<void>;
}

function smtpError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

export function parseHostPort(value: string): { host: string; port: number } {
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(value);
  if (!match) throw new Error(`inboundSmtp must be host:port, not ${value}`);
  return { host: match[1]!, port: Number(match[2]) };
}

export async function startInboundSmtp(
  runtime: Context,
  recordOutcome: LateOutcomeRecorder,
): Promise<InboundSmtpListener> {
  const { host, port } = parseHostPort(runtime.config.inboundSmtp!);
  const domain = runtime.config.bounceDomain;
  if (!domain) throw new Error('inboundSmtp needs bounceDomain: the listener accepts mail for that domain only');
  const logger = runtime.logger;

  const deliveryOf = (address: string): string | null => {
    const match = /^bounce\+([0-9a-z]+)@(.+)$/i.exec(address);
    if (!match || match[2]!.toLowerCase() !== domain) return null;
    return verifyBounceToken(runtime.tokens, match[1]!);
  };

  const server = new SMTPServer({
    name: domain,
    banner: 'Herald bounce processor',
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    size: INBOUND_MAX_BYTES,
    maxClients: 50,
    socketTimeout: 60_000,
    logger: false,
    onRcptTo(address, session, callback) {
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) return callback(smtpError(452, 'Too many recipients'));
      const addr = address.address ?? '';
      if (!addr.toLowerCase().endsWith(`@${domain}`))
        return callback(smtpError(550, `Relay denied: this server accepts mail for ${domain} only`));
      if (!deliveryOf(addr)) return callback(smtpError(550, 'No such bounce address'));
      callback();
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= INBOUND_MAX_BYTES) chunks.push(chunk);
      });
      stream.on('error', () => callback(smtpError(451, 'Message could not be read')));
      stream.on('end', () => {
        if (stream.sizeExceeded || size > INBOUND_MAX_BYTES)
          return callback(smtpError(552, `Message exceeds ${INBOUND_MAX_BYTES} bytes`));
        const deliveries = session.envelope.rcptTo
          .map((r) => deliveryOf(r.address))
          .filter((id): id is string => id !== null);
        handleMessage(Buffer.concat(chunks), deliveries).then(
          (answer) => (answer ? callback(smtpError(answer.code, answer.message)) : callback()),
          (error: unknown) => {
            logger.warn('inbound mail failed', { error });
            callback(smtpError(451, 'Temporary failure, try again later'));
          },
        );
      });
    },
  });

  /** null: accepted; otherwise the refusal. */
  const handleMessage = async (
    raw: Buffer,
    deliveries: string[],
  ): Promise<{ code: number; message: string } | null> => {
    let report;
    try {
      report = await readReport(raw);
    } catch {
      report = null;
    }
    if (!report)
      return { code: 554, message: 'Not a delivery status notification (RFC 3464) or feedback report (RFC 5965)' };
    if (report.kind === 'delay') return null;
    const em = runtime.orm.em.fork();
    for (const deliveryId of deliveries) {
      const applied =
        report.kind === 'complaint'
          ? await recordEmailFeedback(
              em,
              deliveryId,
              { kind: 'complaint', code: report.feedbackType, detail: null },
              recordOutcome,
            )
          : await recordEmailFeedback(
              em,
              deliveryId,
              { kind: report.hard ? 'hard_bounce' : 'soft_bounce', code: report.status, detail: report.diagnostic },
              recordOutcome,
            );
      logger.info('inbound report', { kind: report.kind, delivery_id: deliveryId, applied });
    }
    return null;
  };

  server.on('error', (error) => logger.warn('inbound smtp error', { error: (error as Error).message }));
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const bound = server.server.address() as AddressInfo;
  logger.info('inbound smtp listening', { host, port: bound.port, domain });
  return {
    host,
    port: bound.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

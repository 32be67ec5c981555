// Reading the reports mail systems send back: delivery status notifications (RFC 3464, a
// multipart/report with a message/delivery-status part) and abuse feedback reports (ARF, RFC 5965,
// a multipart/report with a message/feedback-report part). Anything else is not a report.
import { simpleParser } from 'mailparser';

export type MailReport =
  | { kind: 'bounce'; hard: boolean; status: string; diagnostic: string | null; recipient: string | null }
  | { kind: 'delay'; status: string | null }
  | { kind: 'complaint'; feedbackType: string; recipient: string | null };

/** Header-style fields of one block ("Name: value", continuation lines folded), names lower-cased. */
function fieldBlocks(text: string): Array<Map<string, string>> {
  const blocks: Array<Map<string, string>> = [];
  for (const chunk of text.replace(/\r\n/g, '\n').split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    let last: string | null = null;
    for (const line of chunk.split('\n')) {
      if (/^[ \t]/.test(line) && last) {
        fields.set(last, `${fields.get(last)} ${line.trim()}`);
        continue;
      }
      const match = /^([A-Za-z0-9-]+)\s*:\s*(.*)$/.exec(line);
      if (!match) continue;
      last = match[1]!.toLowerCase();
      fields.set(last, match[2]!.trim());
    }
    if (fields.size > 0) blocks.push(fields);
  }
  return blocks;
}

/** "rfc822; ann@example.org" -> ann@example.org */
function addressField(value: string | undefined): string | null {
  if (!value) return null;
  const address = value.includes(';') ? value.slice(value.indexOf(';') + 1) : value;
  return address.trim().replace(/^<|>$/g, '').toLowerCase() || null;
}

export function readDeliveryStatus(text: string): MailReport | null {
  const recipients = fieldBlocks(text).filter((b) => b.has('action') || b.has('final-recipient'));
  // The first recipient that failed decides; else a delay; else nothing to act on.
  const failed = recipients.find((b) => (b.get('action') ?? '').toLowerCase() === 'failed');
  if (failed) {
    const status = (failed.get('status') ?? '5.0.0').split(/\s/)[0]!;
    return {
      kind: 'bounce',
      hard: !status.startsWith('4'),
      status,
      diagnostic: failed.get('diagnostic-code')?.slice(0, 500) ?? null,
      recipient: addressField(failed.get('final-recipient') ?? failed.get('original-recipient')),
    };
  }
  const delayed = recipients.find((b) => (b.get('action') ?? '').toLowerCase() === 'delayed');
  if (delayed) return { kind: 'delay', status: delayed.get('status') ?? null };
  return null;
}

export function readFeedbackReport(text: string): MailReport | null {
  const fields = fieldBlocks(text)[0];
  const feedbackType = fields?.get('feedback-type');
  if (!fields || !feedbackType) return null;
  return {
    kind: 'complaint',
    feedbackType: feedbackType.toLowerCase().slice(0, 64),
    recipient: addressField(fields.get('original-rcpt-to')),
  };
}

/** The report a raw message carries, or null when it is not a DSN or an ARF report. */
export async function readReport(raw: Buffer): Promise<MailReport | null> {
  const parsed = await simpleParser(raw, { keepDeliveryStatus: true });
  const type = parsed.headers.get('content-type') as { value?: string; params?: Record<string, string> } | undefined;
  if (type?.value?.toLowerCase() !== 'multipart/report') return null;
  const reportType = (type.params?.['report-type'] ?? '').toLowerCase();
  const part = (contentType: string) =>
    parsed.attachments.find((a) => a.contentType.toLowerCase() === contentType)?.content.toString('utf8');
  if (reportType === 'delivery-status') {
    const text = part('message/delivery-status') ?? part('message/global-delivery-status');
    return text ? readDeliveryStatus(text) : null;
  }
  if (reportType === 'feedback-report') {
    const text = part('message/feedback-report');
    return text ? readFeedbackReport(text) : null;
  }
  return null;
}

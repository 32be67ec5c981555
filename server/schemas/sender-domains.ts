// Sender domains: a domain the tenant sends from, with the DKIM record to publish and its check state.
import { domainToASCII } from 'node:url';
import { z } from 'zod';
import { isoDateTime } from './common.ts';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** A DNS domain name: trimmed, lowercased, trailing dot dropped, IDN converted to A-labels; two labels at least. */
export const domainName = z
  .string()
  .trim()
  .min(1)
  .max(253)
  .transform((value, ctx) => {
    const ascii = domainToASCII(value.replace(/\.$/, '').toLowerCase());
    const labels = ascii.split('.');
    if (
      !ascii ||
      ascii.length > 253 ||
      labels.length < 2 ||
      !labels.every((l) => LABEL.test(l)) ||
      /^\d+$/.test(labels.at(-1)!)
    ) {
      ctx.addIssue({ code: 'custom', message: 'must be a domain name such as mail.example.com', input: value });
      return z.NEVER;
    }
    return ascii;
  });

export const RegisterSenderDomainRequest = z.object({ domain: domainName }).meta({ id: 'RegisterSenderDomainRequest' });

export const SenderDomainStatus = z.enum(['pending', 'verified', 'failed']);
export type SenderDomainStatus = z.infer<typeof SenderDomainStatus>;

export const DnsRecord = z.object({
  type: z.literal('TXT'),
  name: z.string().describe('The fully qualified record name'),
  value: z.string().describe('The record data; DNS tools split it into 255-character strings, which is fine'),
});
export type DnsRecord = z.infer<typeof DnsRecord>;

export const SenderDomainResponse = z
  .object({
    domain: z.string(),
    status: SenderDomainStatus.describe(
      'pending until the first refresh; verified when the DKIM record is published and matches',
    ),
    dns_records: z.array(DnsRecord),
    last_checked_at: isoDateTime.nullable(),
    last_error: z.string().nullable().describe('Why the last refresh did not verify the domain'),
  })
  .meta({ id: 'SenderDomainResponse' });
export type SenderDomainResponse = z.infer<typeof SenderDomainResponse>;

export const SenderDomainParams = z.object({ domain: domainName });

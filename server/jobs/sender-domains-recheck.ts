// Re-checks sender domains' DKIM records in DNS every hour, each domain about once a day: a record
// published after registration verifies its domain without anyone pressing refresh, and one taken down
// (or changed) stops Herald signing with a key the receivers can no longer check.
import { defineJob } from './types.ts';
import { recheckSenderDomains } from '../channels/email/sender-domains.ts';

/** How old a check may get before the domain is looked up again. */
export const SENDER_DOMAIN_RECHECK_MS = 24 * 3600_000;
/** Domains per run: DNS lookups take up to seconds each, and the next hourly run takes the rest. */
const DOMAINS_PER_RUN = 500;

export const senderDomainsRecheckJob = defineJob({
  name: 'sender-domains-recheck',
  queue: { retryLimit: 2, retryDelay: 300, policy: 'singleton', expireInSeconds: 3600 },
  schedule: '41 * * * *',
  handler: async (_jobs, runtime) => {
    const result = await recheckSenderDomains(runtime, runtime.orm.em.fork(), {
      staleMs: SENDER_DOMAIN_RECHECK_MS,
      limit: DOMAINS_PER_RUN,
    });
    runtime.logger.info('sender domains re-checked', result);
  },
});

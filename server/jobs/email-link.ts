// The email-link job: decides, after the response, whether a resend-verification or password-reset
// request issues a link (see fulfilEmailLinkRequest), so those routes do the same work, and take the
// same time, whether or not the address has an account. The email itself goes out via system-email.
import { defineJob } from './types.ts';
import { EMAIL_LINK_JOB, fulfilEmailLinkRequest, type EmailLinkRequest } from '../resources/auth.ts';

export const emailLinkJob = defineJob<EmailLinkRequest>({
  name: EMAIL_LINK_JOB,
  queue: {
    retryLimit: 5,
    retryDelay: 5,
    retryBackoff: true,
    retryDelayMax: 300,
    expireInSeconds: 60,
    deleteAfterSeconds: 3600,
    notify: true,
  },
  work: { batchSize: 1, pollingIntervalSeconds: 2 },
  async handler(jobs, runtime) {
    for (const job of jobs) await fulfilEmailLinkRequest(runtime, runtime.orm.em.fork(), job.data);
  },
});

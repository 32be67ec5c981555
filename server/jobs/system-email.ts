// The system-email job: sends one of Herald's own emails through the install's SMTP after the request
// that caused it has committed (email/system-email-queue.ts enqueues it in the same transaction), so a
// rolled-back request sends nothing and response timing never depends on mail delivery.
import { defineJob } from './types.ts';
import { installSmtp } from '../channels/email/install-smtp.ts';
import type { SealedSystemEmail } from '../channels/email/system-email-queue.ts';
import { renderSystemEmail, type SystemEmail } from '../channels/email/system-emails.ts';
import { systemEmailAad } from '../base/crypto/aad.ts';
import { SYSTEM_EMAIL_JOB } from '../base/queue.ts';

// Services enqueue through email/system-email-queue.ts; re-exported for the job's other callers.
export { enqueueSystemEmail } from '../channels/email/system-email-queue.ts';

export const systemEmailJob = defineJob<SealedSystemEmail>({
  name: SYSTEM_EMAIL_JOB,
  queue: {
    retryLimit: 8,
    retryDelay: 5,
    retryBackoff: true,
    retryDelayMax: 600,
    expireInSeconds: 120,
    deleteAfterSeconds: 24 * 3600,
    deadLetter: `${SYSTEM_EMAIL_JOB}-dead`,
    notify: true,
  },
  work: { batchSize: 1, pollingIntervalSeconds: 2 },
  async handler(jobs, runtime) {
    for (const job of jobs) {
      const { seal_id, sealed_token, ...rest } = job.data;
      const email = { ...rest, token: runtime.keyRing.decrypt(sealed_token, systemEmailAad(seal_id)) } as SystemEmail;
      const smtp = await installSmtp(runtime, runtime.orm.em.fork());
      if (!smtp) {
        // Nothing to retry until an operator configures SMTP: warn (without the link) and finish.
        runtime.logger.warn('system email not sent: no install SMTP configured (herald init --smtp-url)', {
          kind: email.kind,
          job_id: job.id,
        });
        continue;
      }
      const rendered = await renderSystemEmail(runtime.config, email);
      await runtime.smtp.send(smtp.settings, {
        from: smtp.from,
        to: email.to,
        subject: rendered.subject,
        html: rendered.html,
        text: rendered.text,
      });
      runtime.logger.info('system email sent', { kind: email.kind, job_id: job.id });
    }
  },
});

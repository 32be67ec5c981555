// The system-email job: sends one of Herald's own emails through the install's SMTP after the request
// that caused it has committed (it is enqueued in the same transaction), so a rolled-back request sends
// nothing and response timing never depends on mail delivery. The link token travels sealed with the
// key ring: the queue table never holds it in clear (and key rotation re-wraps it while the job waits,
// see crypto/encrypted-columns.ts).
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { defineJob } from './types.ts';
import { bossDb } from '../db/sql.ts';
import type { Runtime } from '../runtime.ts';
import { installSmtp } from '../email/install-smtp.ts';
import { renderSystemEmail, type SystemEmail } from '../email/system-emails.ts';
import { systemEmailAad } from '../crypto/aad.ts';
import { SYSTEM_EMAIL_JOB } from '../queue.ts';

type SealedSystemEmail = Omit<SystemEmail, 'token'> & { seal_id: string; sealed_token: string };

/** Enqueues a system email inside `tx`: it is sent only if the transaction commits. */
export async function enqueueSystemEmail(runtime: Runtime, tx: EntityManager, email: SystemEmail): Promise<void> {
  if (!runtime.boss) throw new Error('the job queue is not running');
  const { token, ...rest } = email;
  const sealId = randomUUID();
  const data = { ...rest, seal_id: sealId, sealed_token: runtime.keyRing.encrypt(token, systemEmailAad(sealId)) } as SealedSystemEmail;
  await runtime.boss.send(SYSTEM_EMAIL_JOB, data, { db: bossDb(tx) });
}

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
        runtime.logger.warn('system email not sent: no install SMTP configured (herald init --smtp-url)', { kind: email.kind, job_id: job.id });
        continue;
      }
      const rendered = await renderSystemEmail(runtime.config, email);
      await runtime.smtp.send(smtp.settings, { from: smtp.from, to: email.to, subject: rendered.subject, html: rendered.html, text: rendered.text });
      runtime.logger.info('system email sent', { kind: email.kind, job_id: job.id });
    }
  },
});

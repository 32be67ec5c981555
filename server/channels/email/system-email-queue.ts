// Enqueuing one of Herald's own emails: the system-email job (jobs/system-email.ts) sends it after the
// request that caused it has committed, since it is enqueued in that request's transaction. The link
// token travels sealed with the key ring: the queue table never holds it in clear (and key rotation
// re-wraps it while the job waits, see crypto/encrypted-columns.ts).
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { systemEmailAad } from '../../base/crypto/aad.ts';
import { bossDb } from '../../base/db/sql.ts';
import { SYSTEM_EMAIL_JOB } from '../../base/queue.ts';
import type { Context } from '../../base/context.ts';
import type { SystemEmail } from './system-emails.ts';

/** A system email as its job carries it: the link token sealed under the seal's own random id. */
export type SealedSystemEmail = Omit<SystemEmail, 'token'> & { seal_id: string; sealed_token: string };

/** Enqueues a system email inside `tx`: it is sent only if the transaction commits. */
export async function enqueueSystemEmail(runtime: Context, tx: EntityManager, email: SystemEmail): Promise<void> {
  if (!runtime.boss) throw new Error('the job queue is not running');
  const { token, ...rest } = email;
  const sealId = randomUUID();
  const data = {
    ...rest,
    seal_id: sealId,
    sealed_token: runtime.keyRing.encrypt(token, systemEmailAad(sealId)),
  } as SealedSystemEmail;
  await runtime.boss.send(SYSTEM_EMAIL_JOB, data, { db: bossDb(tx) });
}

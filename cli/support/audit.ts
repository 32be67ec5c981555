// Local admin writes are audited like the API's: the write and its audit entry (actor: the host's
// operating-system account) commit together.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Runtime } from '../../server/app/runtime.ts';
import { cliActor, recordAudit, type AuditEntry } from '../../server/resources/audit-log.ts';

export async function auditedWrite<T>(
  runtime: Runtime,
  entry: Omit<AuditEntry, 'actor' | 'target'> & { target: { kind: string; id?: string | null } },
  write: (em: EntityManager) => Promise<T>,
  targetId?: (result: T) => string | null,
): Promise<T> {
  return runtime.orm.em.fork().transactional(async (tx) => {
    const result = await write(tx);
    await recordAudit(tx, {
      ...entry,
      actor: cliActor(),
      target: { kind: entry.target.kind, id: targetId ? targetId(result) : (entry.target.id ?? null) },
    });
    return result;
  });
}

// What is learnt of a delivery after its send: a bounce or a complaint (channels/email/feedback.ts,
// through the inbound listener). The deliveries table is this folder's, so the channels that hear of
// such an outcome are handed this recorder (app/runtime.ts) instead of writing the row themselves.
import type { EntityManager } from '@mikro-orm/postgresql';
import { execute } from '../base/db/sql.ts';
import type { LateOutcomeRecorder } from '../channels/types.ts';
import { truncate } from './stages/store.ts';

const RECORD_LATE_OUTCOME = `UPDATE deliveries SET status = $2, last_error = $3, updated_at = now() WHERE id = $1`;

export const recordLateOutcome: LateOutcomeRecorder = async (em: EntityManager, deliveryId, outcome) => {
  await execute(em, RECORD_LATE_OUTCOME, [deliveryId, outcome.status, truncate(outcome.error)]);
};

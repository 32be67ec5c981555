// Bounces and complaints of a delivered email, in one transaction: the delivery becomes 'bounced' or
// 'complained', the feedback is recorded, the address is suppressed (a hard bounce, a complaint, or
// the third soft bounce in seven days) and the email.bounced / email.complained webhook is emitted.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query, queryOne } from '../../base/db/sql.ts';
import { emitWebhookEvent } from '../../webhooks/emit.ts';
import { suppressAddress } from './suppressions.ts';
import type { LateOutcomeRecorder } from '../types.ts';

export type FeedbackKind = 'hard_bounce' | 'soft_bounce' | 'complaint';

export const SOFT_BOUNCES_TO_SUPPRESS = 3;
const SOFT_BOUNCE_WINDOW = '7 days';

const LOCK_EMAIL_DELIVERY = `SELECT tenant_id, event_id, destination FROM deliveries
  WHERE id = $1 AND channel = 'email' FOR UPDATE`;
const RECORD_FEEDBACK = `INSERT INTO email_feedback (tenant_id, delivery_id, email, kind, detail)
  VALUES ($1, $2, $3, $4, $5)`;
const RECENT_SOFT_BOUNCES = `SELECT count(*)::int AS n FROM email_feedback
  WHERE tenant_id = $1 AND email = $2 AND kind = 'soft_bounce'
    AND created_at > now() - interval '${SOFT_BOUNCE_WINDOW}'`;

export interface FeedbackInput {
  kind: FeedbackKind;
  /** The DSN status (5.1.1) or the ARF feedback type (abuse). */
  code: string;
  detail: string | null;
}

/**
 * Applies a report to a delivery (its row through `recordOutcome`, the deliveries table's owner's);
 * false when the delivery is not an email delivery (any more).
 */
export async function recordEmailFeedback(
  em: EntityManager,
  deliveryId: string,
  input: FeedbackInput,
  recordOutcome: LateOutcomeRecorder,
): Promise<boolean> {
  return em.transactional(async (tx) => {
    const delivery = await queryOne<{ tenant_id: string; event_id: string; destination: string }>(
      tx,
      LOCK_EMAIL_DELIVERY,
      [deliveryId],
    );
    if (!delivery) return false;
    const email = delivery.destination.toLowerCase();
    const complaint = input.kind === 'complaint';
    await recordOutcome(tx, deliveryId, {
      status: complaint ? 'complained' : 'bounced',
      error: `${complaint ? 'complaint' : input.kind === 'hard_bounce' ? 'hard bounce' : 'soft bounce'} ${input.code}${input.detail ? `: ${input.detail}` : ''}`,
    });
    await query(tx, RECORD_FEEDBACK, [delivery.tenant_id, deliveryId, email, input.kind, input.detail]);
    let reason: 'hard_bounce' | 'complaint' | 'soft_bounces' | null = input.kind === 'soft_bounce' ? null : input.kind;
    if (input.kind === 'soft_bounce') {
      const recent = await queryOne<{ n: number }>(tx, RECENT_SOFT_BOUNCES, [delivery.tenant_id, email]);
      if ((recent?.n ?? 0) >= SOFT_BOUNCES_TO_SUPPRESS) reason = 'soft_bounces';
    }
    const suppressed = reason ? (await suppressAddress(tx, delivery.tenant_id, email, reason), true) : false;
    const data = { delivery_id: deliveryId, event_id: delivery.event_id, email, suppressed };
    if (complaint)
      await emitWebhookEvent(tx, delivery.tenant_id, 'email.complained', { ...data, feedback_type: input.code });
    else
      await emitWebhookEvent(tx, delivery.tenant_id, 'email.bounced', {
        ...data,
        bounce_type: input.kind === 'hard_bounce' ? 'hard' : 'soft',
        status: input.code,
        diagnostic: input.detail,
      });
    return true;
  });
}

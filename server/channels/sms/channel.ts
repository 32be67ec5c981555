// The SMS channel: one delivery per contact with a phone (the destination, E.164). The text is the
// sms rendering of the message (title and body), sent through the tenant's enabled transports in
// priority order with failover (failover.ts): a retryable failure moves on to the next provider in
// the same attempt. A refused credential (401/403, Vonage's bad credentials) fails over too; when no
// provider failed for a passing reason, and at least one refused its credentials, the delivery fails
// for good instead of retrying the same refusals later. Circuits and pauses are the tenant's own
// per provider (`tenant:sms:twilio`).
import type { Context } from '../../base/context.ts';
import { normalisePhone } from '../../schemas/contacts.ts';
import { sendWithFailover, type ProviderCandidate } from '../failover.ts';
import { renderMessageDelivery, smsText } from '../render-delivery.ts';
import { lookupOnce, type ChannelSender, type DeliveryOutcome } from '../types.ts';
import type { SmsAnswer, SmsMessage } from './answers.ts';
import { sendGateway } from './gateway.ts';
import { loadEnabledSmsTransports, type SmsCredentials } from './sms-transports.ts';
import { sendTwilio } from './twilio.ts';
import { sendVonage } from './vonage.ts';

/** Sends one text through one provider's transport. */
export function sendSmsWith(runtime: Context, credentials: SmsCredentials, message: SmsMessage): Promise<SmsAnswer> {
  switch (credentials.provider) {
    case 'twilio':
      return sendTwilio(runtime, credentials, message);
    case 'vonage':
      return sendVonage(runtime, credentials, message);
    case 'http':
      return sendGateway(runtime, credentials, message);
  }
}

export const smsCircuitKey = (tenantId: string, provider: string) => `${tenantId}:sms:${provider}`;

/** Sends through the transports in order; a run of credential refusals only is final. */
export async function sendSmsWithFailover(
  runtime: Context,
  tenantId: string,
  transports: SmsCredentials[],
  message: SmsMessage,
): Promise<DeliveryOutcome> {
  let refused = 0;
  let passing = 0;
  const candidates: ProviderCandidate[] = transports.map((credentials) => ({
    provider: credentials.provider,
    circuitKey: smsCircuitKey(tenantId, credentials.provider),
    send: async () => {
      try {
        const answer = await sendSmsWith(runtime, credentials, message);
        if (answer.status === 'failed' && answer.retryable) {
          if (answer.credentialsRefused) refused++;
          else passing++;
        }
        return answer;
      } catch (error) {
        passing++;
        throw error;
      }
    },
  }));
  const outcome = await sendWithFailover(runtime, candidates);
  const skipped = outcome.status === 'failed' && (outcome.providerAttempts ?? []).some((a) => a.outcome === 'skipped');
  if (outcome.status === 'failed' && outcome.retryable && refused > 0 && passing === 0 && !skipped)
    return { ...outcome, retryable: false };
  return outcome;
}

export const smsChannel: ChannelSender = {
  channel: 'sms',
  async deliver({ runtime, em, delivery, event, contact, renderVariables, templates, lookups }) {
    const transports = await lookupOnce(lookups, `sms-transports:${event.tenant_id}`, () =>
      loadEnabledSmsTransports(runtime, em, event.tenant_id),
    );
    if (transports.length === 0) return { status: 'skipped', reason: 'no_transport' };
    const readable = transports.flatMap((t) => (t.state === 'ready' ? [t.credentials] : []));
    if (readable.length === 0) return { status: 'skipped', reason: 'credentials_unreadable' };
    const to = normalisePhone(delivery.destination);
    if (!to) return { status: 'failed', error: 'the contact phone is not a valid E.164 number', retryable: false };
    const rendered = await renderMessageDelivery(em, 'sms', event, contact, renderVariables, templates);
    if (!rendered) return { status: 'skipped', reason: 'no_template' };
    const text = smsText(rendered);
    if (!text) return { status: 'skipped', reason: 'no_template' };
    return sendSmsWithFailover(runtime, event.tenant_id, readable, { to, text, reference: delivery.id });
  },
};

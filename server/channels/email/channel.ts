// The email channel: renders the email template (subject, branded HTML, text part), sends through
// the tenant's relays with failover (its transport or the install's default SMTP, then its fallback
// transport: transport.ts), and signs with DKIM when the From address finally used belongs to one of
// the tenant's verified sender domains. A suppressed address is skipped;
// types whose opt-out policy is on carry one-click unsubscribe headers; with a bounce domain the
// envelope sender is the delivery's VERP address.
import { dkimSigningFor } from './sender-domains.ts';
import { emailFlagsOf, emailLinksFor, type EmailFlagsKey } from './links.ts';
import { sendTenantMail, type EmailOutcome } from './transport.ts';
import { renderEmailDelivery } from '../render-delivery.ts';
import { loadEmailTransports } from './tenant-smtp.ts';
import { lookupOnce, type ChannelSender, type DeliveryOutcome } from '../types.ts';

export const emailChannel: ChannelSender = {
  channel: 'email',
  async deliver({ runtime, em, delivery, event, contact, renderVariables, templates, lookups }) {
    const key = { tenantId: event.tenant_id, typeKey: event.type_key, to: delivery.destination };
    const flags = await lookupOnce(lookups, flagsLookupKey(key), async () => (await emailFlagsOf(em, [key]))[0]!);
    const links = emailLinksFor(
      runtime,
      { id: delivery.id, tenantId: event.tenant_id, contactId: contact.id, typeKey: event.type_key },
      flags,
    );
    if (links.suppressed) return { status: 'skipped', reason: 'suppressed' };
    const rendered = await renderEmailDelivery(
      em,
      event,
      contact,
      { ...renderVariables, ...links.variables },
      templates,
    );
    if (!rendered) return { status: 'skipped', reason: 'no_template' };
    const { email, brand } = rendered;
    const sender = brand.sender ?? {};
    return sendTenantMail(
      runtime,
      em,
      event.tenant_id,
      {
        to: delivery.destination,
        subject: email.subject,
        html: email.html,
        text: email.text,
        fromName: sender.from_name ?? null,
        fromEmail: sender.from_email ?? null,
        replyTo: sender.reply_to ?? null,
        sign: (fromEmail) =>
          lookupOnce(lookups, `dkim:${event.tenant_id}:${fromEmail}`, () =>
            dkimSigningFor(runtime, em, event.tenant_id, fromEmail),
          ),
        headers: links.headers,
        envelopeFrom: links.envelopeFrom,
      },
      () =>
        lookupOnce(lookups, `email-transports:${event.tenant_id}`, () =>
          loadEmailTransports(runtime, em, event.tenant_id),
        ),
    );
  },
  async preload(em, deliveries, lookups) {
    const keys = new Map<string, EmailFlagsKey>();
    for (const { delivery, event } of deliveries) {
      const key = { tenantId: event.tenant_id, typeKey: event.type_key, to: delivery.destination };
      keys.set(flagsLookupKey(key), key);
    }
    const flags = await emailFlagsOf(em, [...keys.values()]);
    [...keys.keys()].forEach((lookupKey, i) => lookups.set(lookupKey, Promise.resolve(flags[i]!)));
  },
};

const flagsLookupKey = (key: EmailFlagsKey) => `email-flags:${key.tenantId}:${key.typeKey}:${key.to.toLowerCase()}`;

export function emailOutcome(result: EmailOutcome): DeliveryOutcome {
  switch (result.status) {
    case 'sent':
      return { status: 'sent', providerMessageId: result.messageId };
    case 'skipped':
      return { status: 'skipped', reason: result.reason };
    case 'failed':
      return { status: 'failed', error: result.error, retryable: result.retryable };
  }
}

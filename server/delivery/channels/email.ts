// The email channel: renders the email template (subject, branded HTML, text part), signs with the
// tenant's verified sender domain when there is one, and sends through the tenant's transport (or the
// install's default SMTP). The rendering, DKIM and transport modules are built on other branches, so
// they are passed in: the registry wires emailChannel({ renderEmail, dkimSigningFor, sendTenantEmail }).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Runtime } from '../../runtime.ts';
import type { BrandRow, EmailTemplateRow } from '../../templates/resolve.ts';
import { deliveryContext, deliveryTemplate } from '../templates.ts';
import type { ChannelSender, DeliveryOutcome, SkipReason } from './types.ts';

export interface OutgoingTenantEmail {
  to: string;
  subject: string;
  html: string;
  text: string;
  fromName: string | null;
  fromEmail: string | null;
  replyTo: string | null;
  dkim: unknown;
}

export type SendTenantEmailResult =
  | { status: 'sent'; messageId: string }
  | { status: 'skipped'; reason: string }
  | { status: 'failed'; error: string; retryable: boolean };

type Awaitable<T> = T | Promise<T>;

export interface EmailDependencies {
  renderEmail(template: EmailTemplateRow, brand: BrandRow, context: Record<string, unknown>): Awaitable<{ subject: string; html: string; text: string }>;
  dkimSigningFor(runtime: Runtime, em: EntityManager, tenantId: string, fromEmail: string): Awaitable<unknown>;
  sendTenantEmail(runtime: Runtime, em: EntityManager, tenantId: string, mail: OutgoingTenantEmail): Promise<SendTenantEmailResult>;
}

export function emailChannel(deps: EmailDependencies): ChannelSender {
  return {
    channel: 'email',
    async deliver({ runtime, em, delivery, event, contact, renderVariables }) {
      const resolved = await deliveryTemplate(em, 'email', event, contact);
      if (!resolved) return { status: 'skipped', reason: 'no_template' };
      const rendered = await deps.renderEmail(resolved.template, resolved.brand, deliveryContext(resolved.brand, renderVariables, contact));
      const sender = resolved.brand.sender ?? {};
      const fromEmail = sender.from_email ?? null;
      const dkim = fromEmail ? await deps.dkimSigningFor(runtime, em, event.tenant_id, fromEmail) : null;
      const result = await deps.sendTenantEmail(runtime, em, event.tenant_id, {
        to: delivery.destination,
        subject: rendered.subject,
        html: rendered.html,
        text: rendered.text,
        fromName: sender.from_name ?? null,
        fromEmail,
        replyTo: sender.reply_to ?? null,
        dkim,
      });
      return emailOutcome(result);
    },
  };
}

export function emailOutcome(result: SendTenantEmailResult): DeliveryOutcome {
  switch (result.status) {
    case 'sent':
      return { status: 'sent', providerMessageId: result.messageId };
    case 'skipped':
      return { status: 'skipped', reason: result.reason as SkipReason };
    case 'failed':
      return { status: 'failed', error: result.error, retryable: result.retryable };
  }
}

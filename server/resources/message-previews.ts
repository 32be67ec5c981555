// The previews of sms, chat and http templates: what a delivery of the type would carry, found and
// rendered as sending does (the channel's own template through the fallback chain, else, for sms and
// chat, the inbox template's title and body), with the request's variables and sample contact.
import type { EntityManager } from '@mikro-orm/postgresql';
import { invalidField } from '../base/errors.ts';
import { TemplateError, UnfilledSlotError } from '../base/template-engine.ts';
import { findBrand, renderContext, resolveTemplate, type ChatBlocks } from '../channels/resolve.ts';
import { renderInbox } from '../channels/render.ts';
import {
  chatText,
  messageFromInbox,
  messageFromTemplate,
  smsText,
  type MessageKind,
  type RenderedMessageOf,
} from '../channels/render-delivery.ts';
import { smsLength, type SmsEncoding } from '../channels/sms/encoding.ts';
import type { JsonValue } from '../schemas/common.ts';
import type { RenderRequest } from '../schemas/templates.ts';

export async function previewSms(
  em: EntityManager,
  tenantId: string,
  request: RenderRequest,
): Promise<{ text: string; encoding: SmsEncoding; segments: number }> {
  const text = smsText(await previewMessage(em, tenantId, 'sms', request));
  const { encoding, segments } = smsLength(text);
  return { text, encoding, segments };
}

export async function previewChat(
  em: EntityManager,
  tenantId: string,
  request: RenderRequest,
): Promise<{ text: string; blocks: ChatBlocks | null }> {
  const message = await previewMessage(em, tenantId, 'chat', request);
  return { text: chatText(message), blocks: message.blocks };
}

/**
 * The body of an http template. Without one the http channel sends its default body, built from the
 * event itself (its id, its masked variables), which a preview does not have: 422 then.
 */
export async function previewHttp(
  em: EntityManager,
  tenantId: string,
  request: RenderRequest,
): Promise<{ body: JsonValue }> {
  const message = await previewMessage(em, tenantId, 'http', request);
  return { body: message.http_body! };
}

/** 422 for a missing brand, no template (of the kind, or the inbox template where it stands in), or an unfilled slot. */
async function previewMessage<K extends MessageKind>(
  em: EntityManager,
  tenantId: string,
  kind: K,
  request: RenderRequest,
): Promise<RenderedMessageOf<K>> {
  const brand = await findBrand(em, tenantId, request.brand_key);
  if (!brand) throw invalidField(['body', 'brand_key'], `no branding ${request.brand_key}`, 'not_found');
  const slot = { tenantId, typeKey: request.notification_type_key, brand, language: request.language ?? null };
  const context = renderContext(brand, request.variables, request.contact ?? {});
  const own = await resolveTemplate(em, kind, slot);
  const inbox = own || kind === 'http' ? null : await resolveTemplate(em, 'inbox', slot);
  if (!own && !inbox) {
    const standIn = kind === 'http' ? '' : ' nor inbox template';
    throw invalidField(
      ['body', 'notification_type_key'],
      `no ${kind} template${standIn} resolves for type ${request.notification_type_key} with brand ${brand.key} (or the default brand) in ${request.language ?? 'the default language'} or the tenant's default language`,
      'no_template',
    );
  }
  try {
    return own
      ? messageFromTemplate(kind, own.template, context)
      : messageFromInbox(kind, renderInbox(inbox!.template, context));
  } catch (error) {
    if (error instanceof UnfilledSlotError) {
      // A contact field is named where the sample contact gives it: loc ["body", "contact", "name"].
      const loc = error.slot.startsWith('contact.')
        ? ['body', ...error.slot.split('.')]
        : ['body', 'variables', error.slot];
      throw invalidField(loc, error.message, 'missing');
    }
    if (error instanceof TemplateError)
      throw invalidField(['body', 'variables'], `the template cannot be rendered: ${error.message}`, 'template_error');
    throw error;
  }
}

// Configuration as code: a tenant's notification types, brands, templates, sender domains, topics and
// webhook endpoints as one document (herald export / herald apply, GET /v1/configuration, POST
// /v1/configuration/apply). Each entry is its resource's create request, strict (an unknown field is a
// typo, reported with its path); secrets never appear in it. A new resource kind adds one list here and
// one module in resources/configuration-kinds/.
import { z } from 'zod';
import { CreateNotificationTypeRequest } from './notification-types.ts';
import { CreateBrandingRequest } from './brandings.ts';
import {
  CreateChatTemplateRequest,
  CreateEmailTemplateRequest,
  CreateHttpTemplateRequest,
  CreateInboxTemplateRequest,
  CreateSmsTemplateRequest,
} from './templates.ts';
import { RegisterSenderDomainRequest } from './sender-domains.ts';
import { CreateTopicRequest } from './topics.ts';
import { CreateWebhookRequest } from './webhooks.ts';

/** The document's lists, in the order they are created (and the reverse order they are deleted). */
export const ConfigurationDocument = z
  .object({
    version: z.literal(1).default(1).describe('The document format version'),
    notification_types: z.array(CreateNotificationTypeRequest.strict()).default([]),
    brands: z.array(CreateBrandingRequest.strict()).default([]),
    email_templates: z.array(CreateEmailTemplateRequest.strict()).default([]),
    inbox_templates: z.array(CreateInboxTemplateRequest.strict()).default([]),
    sms_templates: z.array(CreateSmsTemplateRequest.strict()).default([]),
    chat_templates: z.array(CreateChatTemplateRequest.strict()).default([]),
    http_templates: z.array(CreateHttpTemplateRequest.strict()).default([]),
    sender_domains: z.array(RegisterSenderDomainRequest.strict()).default([]),
    /** Topic definitions only: subscriptions are data, never part of the document. */
    topics: z.array(CreateTopicRequest.strict()).default([]),
    /** Endpoints named by their URL, without their signing secrets. */
    webhooks: z.array(CreateWebhookRequest.strict()).default([]),
  })
  .strict()
  .meta({ id: 'ConfigurationDocument' });
export type ConfigurationDocument = z.infer<typeof ConfigurationDocument>;
export type ConfigurationKindName = Exclude<keyof ConfigurationDocument, 'version'>;

export const ApplyConfigurationRequest = z
  .object({
    document: ConfigurationDocument,
    dry_run: z.boolean().default(false).describe('Plan (and check every write) without changing anything'),
    prune: z.boolean().default(false).describe('Delete what the document does not list (never the default brand)'),
  })
  .meta({ id: 'ApplyConfigurationRequest' });
export type ApplyConfigurationRequest = z.infer<typeof ApplyConfigurationRequest>;

export const ConfigurationChange = z.object({
  kind: z.string().describe('The document list: notification_types, brands, email_templates ...'),
  action: z.enum(['create', 'update', 'delete']),
  id: z.string().describe('The key, domain, or template slot (type/brand/language)'),
  fields: z.array(z.string()).describe('For an update, the fields that change'),
});
export type ConfigurationChange = z.infer<typeof ConfigurationChange>;

export const ConfigurationPlanResponse = z
  .object({
    changes: z.array(ConfigurationChange),
    applied: z.boolean().describe('false for a dry run or when there was nothing to change'),
  })
  .meta({ id: 'ConfigurationPlanResponse' });
export type ConfigurationPlanResponse = z.infer<typeof ConfigurationPlanResponse>;

// Email templates (management): CRUD, the rendered preview, and the variable-change report.
import { z } from 'zod';
import { defineRoute } from '../http/route.ts';
import {
  AffectedByParams,
  AffectedTemplateResponse,
  CreateEmailTemplateRequest,
  EmailTemplateResponse,
  RenderRequest,
  RenderedEmailResponse,
  TemplateListQuery,
  TemplateParams,
  UpdateEmailTemplateRequest,
} from '../schemas/templates.ts';
import { createTemplate, deleteTemplate, getTemplate, listTemplates, updateTemplate } from '../services/templates.ts';
import { previewEmail, templatesAffectedBy } from '../services/email-templates.ts';

const tag = 'email templates';

export const create = defineRoute({
  method: 'POST',
  path: '/v1/email-templates',
  summary: 'Create an email template for a type + brand + language slot',
  tag,
  auth: 'management',
  body: CreateEmailTemplateRequest,
  responses: { 201: EmailTemplateResponse },
  errors: [409],
  handler: ({ em, auth, body }) => createTemplate(em, auth!.tenantId, 'email', body),
});

export const list = defineRoute({
  method: 'GET',
  path: '/v1/email-templates',
  summary: 'List email templates',
  tag,
  auth: 'management',
  query: TemplateListQuery,
  responses: { 200: z.array(EmailTemplateResponse) },
  handler: ({ em, auth, query }) => listTemplates(em, auth!.tenantId, 'email', query),
});

export const render = defineRoute({
  method: 'POST',
  path: '/v1/email-templates/render',
  summary: "Preview an email: the brand's template (else the default brand's), variables over brand values",
  tag,
  auth: 'management',
  body: RenderRequest,
  responses: { 200: RenderedEmailResponse },
  handler: ({ em, auth, body }) => previewEmail(em, auth!.tenantId, body),
});

export const affectedBy = defineRoute({
  method: 'GET',
  path: '/v1/email-templates/affected-by/:notification_type_key',
  summary: 'Email templates of a type that refer to variables the type no longer declares',
  tag,
  auth: 'management',
  params: AffectedByParams,
  responses: { 200: z.array(AffectedTemplateResponse) },
  handler: ({ em, auth, params }) => templatesAffectedBy(em, auth!.tenantId, params.notification_type_key),
});

export const get = defineRoute({
  method: 'GET',
  path: '/v1/email-templates/:template_id',
  summary: 'Get an email template',
  tag,
  auth: 'management',
  params: TemplateParams,
  responses: { 200: EmailTemplateResponse },
  errors: [404],
  handler: ({ em, auth, params }) => getTemplate(em, auth!.tenantId, 'email', params.template_id),
});

export const update = defineRoute({
  method: 'PUT',
  path: '/v1/email-templates/:template_id',
  summary: 'Change an email template (the fields given; 409 when the target slot is taken)',
  tag,
  auth: 'management',
  params: TemplateParams,
  body: UpdateEmailTemplateRequest,
  responses: { 200: EmailTemplateResponse },
  errors: [404, 409],
  handler: ({ em, auth, params, body }) => updateTemplate(em, auth!.tenantId, 'email', params.template_id, body),
});

export const remove = defineRoute({
  method: 'DELETE',
  path: '/v1/email-templates/:template_id',
  summary: 'Delete an email template',
  tag,
  auth: 'management',
  params: TemplateParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    await deleteTemplate(em, auth!.tenantId, 'email', params.template_id);
  },
});

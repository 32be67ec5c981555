// Email templates (management): CRUD (shared with inbox templates), the rendered preview, and the
// variable-change report.
import { z } from 'zod';
import { defineRoute } from '../route.ts';
import {
  AffectedByParams,
  AffectedTemplateResponse,
  CreateEmailTemplateRequest,
  EmailTemplateResponse,
  RenderRequest,
  RenderedEmailResponse,
  UpdateEmailTemplateRequest,
} from '../../schemas/templates.ts';
import { previewEmail, templatesAffectedBy } from '../../resources/email-templates.ts';
import { templateCrudRoutes } from './templates.ts';

const tag = 'email templates';

export const { create, list, get, update, remove } = templateCrudRoutes('email', {
  create: CreateEmailTemplateRequest,
  update: UpdateEmailTemplateRequest,
  response: EmailTemplateResponse,
});

export const render = defineRoute({
  method: 'POST',
  path: '/v1/email-templates/render',
  summary: "Preview an email: the brand's template (else the default brand's), variables over brand values",
  tag,
  auth: 'management',
  body: RenderRequest,
  responses: { 200: RenderedEmailResponse },
  audit: { exempt: 'a preview: changes nothing' },
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

// SMS templates (management): CRUD, like email templates, and the preview with its encoding and
// segment count.
import { defineRoute } from '../route.ts';
import {
  CreateSmsTemplateRequest,
  RenderRequest,
  RenderedSmsResponse,
  SmsTemplateResponse,
  UpdateSmsTemplateRequest,
} from '../../schemas/templates.ts';
import { previewSms } from '../../resources/message-previews.ts';
import { templateCrudRoutes } from './templates.ts';

export const { create, list, get, update, remove } = templateCrudRoutes('sms', {
  create: CreateSmsTemplateRequest,
  update: UpdateSmsTemplateRequest,
  response: SmsTemplateResponse,
});

export const render = defineRoute({
  method: 'POST',
  path: '/v1/sms-templates/render',
  summary: "Preview an SMS: the type's SMS template (else its inbox template's title and body), its encoding and parts",
  tag: 'sms templates',
  auth: 'management',
  body: RenderRequest,
  responses: { 200: RenderedSmsResponse },
  audit: { exempt: 'a preview: changes nothing' },
  handler: ({ em, auth, body }) => previewSms(em, auth!.tenantId, body),
});

// HTTP templates (management): CRUD, like email templates, and the preview of the body.
import { defineRoute } from '../route.ts';
import {
  CreateHttpTemplateRequest,
  HttpTemplateResponse,
  RenderRequest,
  RenderedHttpResponse,
  UpdateHttpTemplateRequest,
} from '../../schemas/templates.ts';
import { previewHttp } from '../../resources/message-previews.ts';
import { templateCrudRoutes } from './templates.ts';

export const { create, list, get, update, remove } = templateCrudRoutes('http', {
  create: CreateHttpTemplateRequest,
  update: UpdateHttpTemplateRequest,
  response: HttpTemplateResponse,
});

export const render = defineRoute({
  method: 'POST',
  path: '/v1/http-templates/render',
  summary: "Preview the http channel's request body from the type's HTTP template (422 without one)",
  tag: 'http templates',
  auth: 'management',
  body: RenderRequest,
  responses: { 200: RenderedHttpResponse },
  audit: { exempt: 'a preview: changes nothing' },
  handler: ({ em, auth, body }) => previewHttp(em, auth!.tenantId, body),
});

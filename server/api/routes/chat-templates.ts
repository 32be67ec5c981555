// Chat templates (management): CRUD, like email templates, and the preview.
import { defineRoute } from '../route.ts';
import {
  ChatTemplateResponse,
  CreateChatTemplateRequest,
  RenderRequest,
  RenderedChatResponse,
  UpdateChatTemplateRequest,
} from '../../schemas/templates.ts';
import { previewChat } from '../../resources/message-previews.ts';
import { templateCrudRoutes } from './templates.ts';

export const { create, list, get, update, remove } = templateCrudRoutes('chat', {
  create: CreateChatTemplateRequest,
  update: UpdateChatTemplateRequest,
  response: ChatTemplateResponse,
});

export const render = defineRoute({
  method: 'POST',
  path: '/v1/chat-templates/render',
  summary: "Preview a chat message: the type's chat template and blocks (else its inbox template's title and body)",
  tag: 'chat templates',
  auth: 'management',
  body: RenderRequest,
  responses: { 200: RenderedChatResponse },
  audit: { exempt: 'a preview: changes nothing' },
  handler: ({ em, auth, body }) => previewChat(em, auth!.tenantId, body),
});

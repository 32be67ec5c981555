// Inbox templates (management): CRUD, like email templates.
import {
  CreateInboxTemplateRequest,
  InboxTemplateResponse,
  UpdateInboxTemplateRequest,
} from '../../schemas/templates.ts';
import { templateCrudRoutes } from './templates.ts';

export const { create, list, get, update, remove } = templateCrudRoutes('inbox', {
  create: CreateInboxTemplateRequest,
  update: UpdateInboxTemplateRequest,
  response: InboxTemplateResponse,
});

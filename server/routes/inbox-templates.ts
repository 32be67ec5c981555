// Inbox templates (management): CRUD, like email templates.
import { z } from 'zod';
import { defineRoute } from '../http/route.ts';
import { CreateInboxTemplateRequest, InboxTemplateResponse, TemplateListQuery, TemplateParams, UpdateInboxTemplateRequest } from '../schemas/templates.ts';
import { createTemplate, deleteTemplate, getTemplate, listTemplates, updateTemplate } from '../services/templates.ts';

const tag = 'inbox templates';

export const create = defineRoute({
  method: 'POST',
  path: '/v1/inbox-templates',
  summary: 'Create an inbox template for a type + brand + language slot',
  tag,
  auth: 'management',
  body: CreateInboxTemplateRequest,
  responses: { 201: InboxTemplateResponse },
  errors: [409],
  handler: ({ em, auth, body }) => createTemplate(em, auth!.tenantId, 'inbox', body),
});

export const list = defineRoute({
  method: 'GET',
  path: '/v1/inbox-templates',
  summary: 'List inbox templates',
  tag,
  auth: 'management',
  query: TemplateListQuery,
  responses: { 200: z.array(InboxTemplateResponse) },
  handler: ({ em, auth, query }) => listTemplates(em, auth!.tenantId, 'inbox', query),
});

export const get = defineRoute({
  method: 'GET',
  path: '/v1/inbox-templates/:template_id',
  summary: 'Get an inbox template',
  tag,
  auth: 'management',
  params: TemplateParams,
  responses: { 200: InboxTemplateResponse },
  errors: [404],
  handler: ({ em, auth, params }) => getTemplate(em, auth!.tenantId, 'inbox', params.template_id),
});

export const update = defineRoute({
  method: 'PUT',
  path: '/v1/inbox-templates/:template_id',
  summary: 'Change an inbox template (the fields given; 409 when the target slot is taken)',
  tag,
  auth: 'management',
  params: TemplateParams,
  body: UpdateInboxTemplateRequest,
  responses: { 200: InboxTemplateResponse },
  errors: [404, 409],
  handler: ({ em, auth, params, body }) => updateTemplate(em, auth!.tenantId, 'inbox', params.template_id, body),
});

export const remove = defineRoute({
  method: 'DELETE',
  path: '/v1/inbox-templates/:template_id',
  summary: 'Delete an inbox template',
  tag,
  auth: 'management',
  params: TemplateParams,
  responses: { 204: null },
  errors: [404],
  handler: async ({ em, auth, params }) => {
    await deleteTemplate(em, auth!.tenantId, 'inbox', params.template_id);
  },
});

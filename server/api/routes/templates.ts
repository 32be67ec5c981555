// The CRUD routes shared by every template kind: the same five routes over the one templates service
// (server/resources/templates.ts), differing only in the kind and its request/response schemas.
import { z } from 'zod';
import { defineRoute } from '../route.ts';
import { TemplateListQuery, TemplateParams } from '../../schemas/templates.ts';
import {
  createTemplate,
  deleteTemplate,
  getTemplate,
  listTemplates,
  updateTemplate,
  type TemplateKind,
} from '../../resources/templates.ts';

interface TemplateSchemas {
  create: z.ZodType<{ notification_type_key: string } & Record<string, unknown>>;
  update: z.ZodType<Record<string, unknown>>;
  response: z.ZodType;
}

/** How a summary names the kind ("an email template", "a chat template", "an SMS template"). */
const NAMED: Record<TemplateKind, string> = {
  email: 'an email',
  inbox: 'an inbox',
  sms: 'an SMS',
  chat: 'a chat',
  http: 'an HTTP',
};

export function templateCrudRoutes(kind: TemplateKind, schemas: TemplateSchemas) {
  const tag = `${kind} templates`;
  const path = `/v1/${kind}-templates`;
  const one = `${NAMED[kind]} template`;
  return {
    create: defineRoute({
      method: 'POST',
      path,
      summary: `Create ${one} for a type + brand + language slot`,
      tag,
      auth: 'management',
      body: schemas.create,
      responses: { 201: schemas.response },
      errors: [409],
      handler: ({ em, auth, body }) => createTemplate(em, auth!.tenantId, kind, body),
    }),

    list: defineRoute({
      method: 'GET',
      path,
      summary: `List ${NAMED[kind].split(' ')[1]} templates`,
      tag,
      auth: 'management',
      query: TemplateListQuery,
      responses: { 200: z.array(schemas.response) },
      handler: ({ em, auth, query }) => listTemplates(em, auth!.tenantId, kind, query),
    }),

    get: defineRoute({
      method: 'GET',
      path: `${path}/:template_id`,
      summary: `Get ${one}`,
      tag,
      auth: 'management',
      params: TemplateParams,
      responses: { 200: schemas.response },
      errors: [404],
      handler: ({ em, auth, params }) => getTemplate(em, auth!.tenantId, kind, params.template_id),
    }),

    update: defineRoute({
      method: 'PUT',
      path: `${path}/:template_id`,
      summary: `Change ${one} (the fields given; 409 when the target slot is taken)`,
      tag,
      auth: 'management',
      params: TemplateParams,
      body: schemas.update,
      responses: { 200: schemas.response },
      errors: [404, 409],
      handler: ({ em, auth, params, body }) => updateTemplate(em, auth!.tenantId, kind, params.template_id, body),
    }),

    remove: defineRoute({
      method: 'DELETE',
      path: `${path}/:template_id`,
      summary: `Delete ${one}`,
      tag,
      auth: 'management',
      params: TemplateParams,
      responses: { 204: null },
      errors: [404],
      handler: async ({ em, auth, params }) => {
        await deleteTemplate(em, auth!.tenantId, kind, params.template_id);
      },
    }),
  };
}

// Configuration as code (management): the tenant's types, brands, templates and sender domains as one
// document, and a document applied as a plan in one transaction (herald export / herald apply).
import { defineRoute } from '../route.ts';
import {
  ApplyConfigurationRequest,
  ConfigurationDocument,
  ConfigurationPlanResponse,
} from '../../schemas/configuration.ts';
import { applyConfiguration, exportConfiguration } from '../../resources/configuration.ts';

const tag = 'configuration';

export const exportDocument = defineRoute({
  method: 'GET',
  path: '/v1/configuration',
  summary: "The tenant's configuration as one document (no secrets)",
  tag,
  auth: 'management',
  responses: { 200: ConfigurationDocument },
  handler: ({ runtime, em, auth }) => exportConfiguration(runtime, em, auth!.tenantId),
});

export const apply = defineRoute({
  method: 'POST',
  path: '/v1/configuration/apply',
  summary:
    'Make a document the configuration: the plan (create, update, and with prune delete), applied in one transaction',
  tag,
  auth: 'management',
  body: ApplyConfigurationRequest,
  responses: { 200: ConfigurationPlanResponse },
  errors: [402, 409],
  handler: ({ runtime, em, auth, body }) => applyConfiguration(runtime, em, auth!.tenantId, body),
});

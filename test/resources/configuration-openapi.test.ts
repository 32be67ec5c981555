// The configuration routes in /v1/openapi.json: every route present with its statuses, and the
// document valid OpenAPI 3.1 (responses themselves are checked against these schemas by the test app).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validate } from '@readme/openapi-parser';
import { startTestApp, type TestApp } from '../support/app.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const ROUTES: Array<[string, string, string[]]> = [
  ['post', '/v1/api-keys', ['201', '401', '403', '422']],
  ['get', '/v1/api-keys', ['200', '401', '403']],
  ['delete', '/v1/api-keys/{api_key_id}', ['204', '401', '403', '404', '422']],
  ['post', '/v1/notification-types', ['201', '401', '403', '409', '422']],
  ['get', '/v1/notification-types', ['200', '401', '403', '422']],
  ['get', '/v1/notification-types/{key}', ['200', '404', '422']],
  ['delete', '/v1/notification-types/{key}', ['204', '404', '422']],
  ['patch', '/v1/notification-types/{key}/channel-defaults', ['200', '404', '422']],
  ['patch', '/v1/notification-types/{key}/opt-out-policy', ['200', '404', '422']],
  ['put', '/v1/notification-types/{key}/variables', ['200', '404', '422']],
  ['post', '/v1/notification-types/{key}/restore', ['200', '404', '409', '422']],
  ['post', '/v1/brandings', ['201', '402', '409', '422']],
  ['get', '/v1/brandings', ['200']],
  ['get', '/v1/brandings/{key}', ['200', '404']],
  ['delete', '/v1/brandings/{key}', ['204', '404', '409']],
  ['put', '/v1/brandings/{key}/values', ['200', '404', '422']],
  ['put', '/v1/brandings/{key}/sender', ['200', '404', '422']],
  ['post', '/v1/sender-domains', ['201', '409', '422']],
  ['get', '/v1/sender-domains', ['200']],
  ['get', '/v1/sender-domains/{domain}', ['200', '404']],
  ['delete', '/v1/sender-domains/{domain}', ['204', '404']],
  ['post', '/v1/sender-domains/{domain}/refresh', ['200', '404']],
  ['post', '/v1/email-templates', ['201', '409', '422']],
  ['get', '/v1/email-templates', ['200']],
  ['get', '/v1/email-templates/{template_id}', ['200', '404']],
  ['put', '/v1/email-templates/{template_id}', ['200', '404', '409', '422']],
  ['delete', '/v1/email-templates/{template_id}', ['204', '404']],
  ['post', '/v1/email-templates/render', ['200', '422']],
  ['get', '/v1/email-templates/affected-by/{notification_type_key}', ['200', '422']],
  ['post', '/v1/inbox-templates', ['201', '409', '422']],
  ['get', '/v1/inbox-templates', ['200']],
  ['get', '/v1/inbox-templates/{template_id}', ['200', '404']],
  ['put', '/v1/inbox-templates/{template_id}', ['200', '404', '409', '422']],
  ['delete', '/v1/inbox-templates/{template_id}', ['204', '404']],
];

describe('GET /v1/openapi.json (configuration routes)', () => {
  it('is valid OpenAPI and documents every configuration route as a management route with its statuses', async () => {
    const res = await app.request('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    const result = await validate(structuredClone(doc));
    expect(result.valid).toBe(true);
    for (const [method, path, statuses] of ROUTES) {
      const operation = doc.paths[path]?.[method];
      expect(operation, `${method.toUpperCase()} ${path}`).toBeDefined();
      expect(operation['x-herald-credential']).toBe('management');
      for (const status of [...statuses, '401', '403'])
        expect(Object.keys(operation.responses), `${method} ${path} ${status}`).toContain(status);
    }
    for (const name of [
      'IssuedApiKeyResponse',
      'NotificationTypeResponse',
      'BrandingResponse',
      'SenderDomainResponse',
      'EmailTemplateResponse',
      'InboxTemplateResponse',
      'RenderedEmailResponse',
      'AffectedTemplateResponse',
    ]) {
      expect(doc.components.schemas[name], name).toBeDefined();
    }
  });
});

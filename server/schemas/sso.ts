// SSO sign-in for console users: the public list of providers and the callback's query.
import { z } from 'zod';

export const SsoProviderResponse = z
  .object({
    slug: z.string(),
    name: z.string(),
    kind: z.enum(['github', 'gitlab', 'google', 'microsoft', 'okta', 'keycloak', 'oidc']),
    start_url: z
      .string()
      .meta({ description: 'Where the sign-in page sends the browser to start (302 to the provider)' }),
  })
  .meta({ id: 'SsoProviderResponse' });

export const SsoProviderParams = z.object({
  provider: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must be a provider slug'),
});

// Every field is optional: a provider's answer is judged by the service and shown on the sign-in page,
// never as a validation error to a person who followed a redirect.
export const SsoCallbackQuery = z.object({
  state: z.string().max(512).optional(),
  code: z.string().max(4096).optional(),
  error: z.string().max(256).optional(),
  error_description: z.string().max(2048).optional(),
  iss: z.string().max(2048).optional(),
  scope: z.string().max(2048).optional(),
  session_state: z.string().max(2048).optional(),
});

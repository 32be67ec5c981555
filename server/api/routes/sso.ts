// SSO sign-in for console users (no credential): the providers the sign-in page offers, the start
// (302 to the provider) and the callback (302 back to the sign-in page, which keeps the access token in
// the URL fragment: never sent to a server, removed from the address bar at once).
import { z } from 'zod';
import { defineRoute } from '../route.ts';
import { RATE_POLICIES } from '../../base/rate-limit.ts';
import { SsoCallbackQuery, SsoProviderParams, SsoProviderResponse } from '../../schemas/sso.ts';
import { SsoFailure, clearSsoCookie, finishSso, publicSsoProviders, startSso } from '../../resources/sso.ts';

const TAG = 'sso';

export const listProviders = defineRoute({
  method: 'GET',
  path: '/v1/auth/sso/providers',
  summary: 'The SSO providers console users may sign in with',
  tag: TAG,
  auth: 'public',
  responses: { 200: z.array(SsoProviderResponse) },
  handler: ({ em }) => publicSsoProviders(em),
});

export const start = defineRoute({
  method: 'GET',
  path: '/v1/auth/sso/:provider/start',
  summary: "Starts an SSO sign-in: 302 to the provider's authorization URL (state and PKCE)",
  tag: TAG,
  auth: 'public',
  params: SsoProviderParams,
  responses: { 302: null },
  errors: [404],
  rateLimit: ({ ip }) => [{ policy: RATE_POLICIES.ssoStart, subject: ip }],
  handler: async ({ runtime, em, params }) => {
    try {
      const { location, cookie } = await startSso(runtime, em, params.provider);
      return new Response(null, { status: 302, headers: { Location: location, 'Set-Cookie': cookie } });
    } catch (error) {
      // A provider that cannot be reached is told on the sign-in page, not as JSON to a person.
      if (!(error instanceof SsoFailure)) throw error;
      return new Response(null, { status: 302, headers: { Location: `/login#sso_error=${error.reason}` } });
    }
  },
});

export const callback = defineRoute({
  method: 'GET',
  path: '/v1/auth/sso/:provider/callback',
  summary:
    'Where the provider returns: 302 to /login with the access token, the second factor step (mfa_token) or the reason it failed, in the fragment',
  tag: TAG,
  auth: 'public',
  params: SsoProviderParams,
  query: SsoCallbackQuery,
  responses: { 302: null },
  errors: [404],
  handler: async ({ runtime, em, params, query, event }) => {
    let fragment: string;
    try {
      const signedIn = await finishSso(runtime, em, params.provider, {
        ...query,
        cookie: event.req.headers.get('cookie'),
      });
      // A user with a second factor gets the step that asks for it; the login page finishes it.
      fragment = new URLSearchParams(
        'mfa_required' in signedIn
          ? { mfa_token: signedIn.mfa_token }
          : {
              sso_token: signedIn.access_token,
              expires_in: String(signedIn.expires_in),
              tenant_id: signedIn.tenant_id,
              ...(signedIn.mfa_enrolment_required ? { mfa_enrolment_required: 'true' } : {}),
            },
      ).toString();
    } catch (error) {
      if (!(error instanceof SsoFailure)) throw error;
      fragment = new URLSearchParams({ sso_error: error.reason }).toString();
    }
    return new Response(null, {
      status: 302,
      headers: { Location: `/login#${fragment}`, 'Set-Cookie': clearSsoCookie() },
    });
  },
});

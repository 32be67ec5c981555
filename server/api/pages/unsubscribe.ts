// Pages reached from a tenant's emails by signed links (no credential): one-click unsubscribe (RFC
// 8058) and the hosted preference page. They answer HTML; a forged or altered token answers 404.
import { z } from 'zod';
import { defineRoute } from '../route.ts';
import { readFormBody } from '../body.ts';
import { invalidField } from '../../base/errors.ts';
import {
  invalidLinkPage,
  preferencePage,
  resolveContactLink,
  savePreferencePage,
  unsubscribeConfirmPage,
  applyOneClickUnsubscribe,
} from '../../resources/contact-pages.ts';

const tag = 'email links';
const TokenParams = z.object({ token: z.string().min(1).max(512) });
const Page = z.string().meta({ description: 'An HTML page' });
const FORM_BYTES = 16 * 1024;

export const unsubscribePage = defineRoute({
  method: 'GET',
  path: '/u/:token',
  summary: 'One-click unsubscribe link: a page with a button (changes nothing by itself)',
  tag,
  auth: 'public',
  params: TokenParams,
  produces: 'text/html',
  responses: { 200: Page },
  errors: [404],
  handler: async ({ runtime, em, params }) => {
    const target = await resolveContactLink(runtime, em, params.token, 'unsubscribe');
    return target ? unsubscribeConfirmPage(target) : invalidLinkPage();
  },
});

export const unsubscribeOneClick = defineRoute({
  method: 'POST',
  path: '/u/:token',
  summary:
    "One-click unsubscribe (RFC 8058): the body List-Unsubscribe=One-Click opts the contact out of the type's email",
  tag,
  auth: 'public',
  params: TokenParams,
  produces: 'text/html',
  responses: { 200: Page },
  errors: [404, 413, 415],
  handler: async ({ runtime, em, params, event }) => {
    const target = await resolveContactLink(runtime, em, params.token, 'unsubscribe');
    if (!target) return invalidLinkPage();
    const form = await readFormBody(event.req, FORM_BYTES, runtime.config.requestBodyTimeoutMs);
    if (form.get('List-Unsubscribe') !== 'One-Click')
      throw invalidField(['body', 'List-Unsubscribe'], 'must be One-Click (RFC 8058)');
    return applyOneClickUnsubscribe(em, target);
  },
});

export const preferencesPage = defineRoute({
  method: 'GET',
  path: '/preferences/:token',
  summary: "Hosted preference page: the contact's preference matrix as a form (works without JavaScript)",
  tag,
  auth: 'public',
  params: TokenParams,
  produces: 'text/html',
  responses: { 200: Page },
  errors: [404],
  handler: async ({ runtime, em, params }) => {
    const target = await resolveContactLink(runtime, em, params.token, 'preferences');
    return target ? preferencePage(em, target) : invalidLinkPage();
  },
});

export const preferencesSave = defineRoute({
  method: 'POST',
  path: '/preferences/:token',
  summary: "Saves the hosted preference page's form; answers the page again",
  tag,
  auth: 'public',
  params: TokenParams,
  produces: 'text/html',
  responses: { 200: Page },
  errors: [404, 413, 415],
  handler: async ({ runtime, em, params, event }) => {
    const target = await resolveContactLink(runtime, em, params.token, 'preferences');
    if (!target) return invalidLinkPage();
    const form = await readFormBody(event.req, FORM_BYTES, runtime.config.requestBodyTimeoutMs);
    if (form.get('save') !== '1') throw invalidField(['body', 'save'], "must be 1 (submit the page's form)");
    return savePreferencePage(em, target, form);
  },
});

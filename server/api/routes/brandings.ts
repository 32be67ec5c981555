// Brands (management): create (plan cap), list, get, delete (never the default), values, sender.
import { z } from 'zod';
import { defineRoute } from '../route.ts';
import {
  BrandingParams,
  BrandingResponse,
  CreateBrandingRequest,
  SetBrandingSenderRequest,
  SetBrandingValuesRequest,
} from '../../schemas/brandings.ts';
import {
  brandingResponse,
  brandingResponses,
  createBrand,
  deleteBrand,
  getBrand,
  listBrands,
  setBrandSender,
  setBrandValues,
} from '../../resources/brandings.ts';

const tag = 'brands';

export const create = defineRoute({
  method: 'POST',
  path: '/v1/brandings',
  summary: "Create a brand (402 when the plan's brand cap is reached)",
  tag,
  auth: 'management',
  body: CreateBrandingRequest,
  responses: { 201: BrandingResponse },
  errors: [402, 409],
  handler: async ({ runtime, em, auth, body }) =>
    brandingResponse(runtime, em, auth!.tenantId, await createBrand(em, auth!.tenantId, body)),
});

export const list = defineRoute({
  method: 'GET',
  path: '/v1/brandings',
  summary: 'List brands (the default brand first)',
  tag,
  auth: 'management',
  responses: { 200: z.array(BrandingResponse) },
  handler: async ({ runtime, em, auth }) =>
    brandingResponses(runtime, em, auth!.tenantId, await listBrands(em, auth!.tenantId)),
});

export const get = defineRoute({
  method: 'GET',
  path: '/v1/brandings/:key',
  summary: 'Get a brand',
  tag,
  auth: 'management',
  params: BrandingParams,
  responses: { 200: BrandingResponse },
  errors: [404],
  handler: async ({ runtime, em, auth, params }) =>
    brandingResponse(runtime, em, auth!.tenantId, await getBrand(em, auth!.tenantId, params.key)),
});

export const remove = defineRoute({
  method: 'DELETE',
  path: '/v1/brandings/:key',
  summary: 'Delete a brand and its templates (409 default_brand for the default brand)',
  tag,
  auth: 'management',
  params: BrandingParams,
  responses: { 204: null },
  errors: [404, 409],
  handler: async ({ em, auth, params }) => {
    await deleteBrand(em, auth!.tenantId, params.key);
  },
});

export const values = defineRoute({
  method: 'PUT',
  path: '/v1/brandings/:key/values',
  summary: "Replace the brand's values (name, colour, logo_url and free keys)",
  tag,
  auth: 'management',
  params: BrandingParams,
  body: SetBrandingValuesRequest,
  responses: { 200: BrandingResponse },
  errors: [404],
  handler: async ({ runtime, em, auth, params, body }) =>
    brandingResponse(runtime, em, auth!.tenantId, await setBrandValues(em, auth!.tenantId, params.key, body.values)),
});

export const sender = defineRoute({
  method: 'PUT',
  path: '/v1/brandings/:key/sender',
  summary: "Replace the brand's sender settings (from name, from address, reply-to)",
  tag,
  auth: 'management',
  params: BrandingParams,
  body: SetBrandingSenderRequest,
  responses: { 200: BrandingResponse },
  errors: [404],
  handler: async ({ runtime, em, auth, params, body }) =>
    brandingResponse(runtime, em, auth!.tenantId, await setBrandSender(em, auth!.tenantId, params.key, body)),
});
